"""Collectors over the async env manager: each transition pairs a timestep with the observation that was acted on."""
from __future__ import annotations

import pytest
from easydict import EasyDict

from ding.envs import create_env_manager
from ding.policy import DQNPolicy
from ding.worker import EpisodeSerialCollector, SampleSerialCollector

from ._count_env import CountEnv


def _policy():
    cfg = EasyDict(DQNPolicy.default_config())
    cfg.model = dict(obs_shape=1, action_shape=2, encoder_hidden_size_list=[8, 8])
    return DQNPolicy(cfg, enable_field=["collect"])


def _manager(kind: str):
    env = create_env_manager(EasyDict(type=kind, wait_num=1, step_wait_timeout=0.001, context="spawn"),
                             [CountEnv for _ in range(3)])
    env.seed(0)
    return env


@pytest.mark.parametrize("kind", ["async_subprocess", "base"])
def test_sample_collector_pairs_obs_with_their_timesteps(kind, in_tmp_dir):
    with SampleSerialCollector(EasyDict(), _manager(kind), _policy().collect_mode) as collector:
        data = collector.collect(n_sample=60, policy_kwargs={"eps": 0.5})
        data += collector.collect(n_sample=60, policy_kwargs={"eps": 0.5})
    assert len(data) == 120
    for t in data:
        assert float(t["next_obs"][0]) == float(t["obs"][0]) + 1.0


def test_episode_collector_over_async_manager(in_tmp_dir):
    with EpisodeSerialCollector(EasyDict(), _manager("async_subprocess"), _policy().collect_mode) as collector:
        episodes = collector.collect(n_episode=6, policy_kwargs={"eps": 0.5})
    assert len(episodes) >= 6
    for ep in episodes:
        assert [float(t["obs"][0]) for t in ep] == list(range(len(ep)))
        assert ep[-1]["done"] is True
