"""DI-engine's ``ding.entry.utils``: the random warm-up collect on real workers, and the sample markers."""
from __future__ import annotations

import pytest
from easydict import EasyDict

from ding.entry.utils import mark_not_expert, mark_warm_up, random_collect
from ding.envs import BaseEnvManager
from ding.model import DQN
from ding.policy import DQNPolicy
from ding.worker import NaiveReplayBuffer, SampleSerialCollector
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv


def test_random_collect_fills_the_buffer_and_gives_the_policy_back(in_tmp_dir):
    cfg = EasyDict(DQNPolicy.default_config())
    cfg.model = dict(obs_shape=4, action_shape=2)
    cfg.random_collect_size = 64
    policy = DQNPolicy(cfg, model=DQN(obs_shape=4, action_shape=2))
    env = BaseEnvManager([lambda: CartPoleEnv({}) for _ in range(4)], BaseEnvManager.default_config())
    collector = SampleSerialCollector(SampleSerialCollector.default_config(), env, policy.collect_mode)
    buffer = NaiveReplayBuffer(NaiveReplayBuffer.default_config())
    try:
        random_collect(cfg, policy, collector, env, None, buffer, postprocess_data_fn=mark_warm_up)
        assert buffer.count() >= 64 and collector.envstep >= 64
        sample = buffer.sample(8, 0)
        assert all(s["warm_up"] for s in sample)
        assert collector._policy is policy.collect_mode  # the policy is back
        cfg.random_collect_size = 0
        with pytest.raises(ValueError, match="random_collect_size must be > 0"):
            random_collect(cfg, policy, collector, env, None, buffer)
    finally:
        collector.close()


def test_markers_set_their_key_on_every_sample():
    data = [{"obs": 1}, {"obs": 2}]
    assert mark_not_expert(data) is data and all(d["is_expert"] == 0 for d in data)
    assert all(d["warm_up"] is True for d in mark_warm_up(data))
