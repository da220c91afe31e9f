"""The parts DI-engine's hand-written collectors are made of (``CachePool``, ``TrajBuffer``, ``to_tensor_transitions``),
the policy views such a collector gets (DI-engine's tensor convention), ``_collect_print_freq`` and the env manager's
``_env_ref``."""
from __future__ import annotations

import numpy as np
import torch
from easydict import EasyDict

from ding.envs import BaseEnvManager
from ding.model import VAC
from ding.policy import PPOPolicy
from ding.worker import SampleSerialCollector
from ding.worker.collector.base_serial_collector import CachePool, ISerialCollector, TrajBuffer
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv


def test_cache_pool_keeps_one_entry_per_env_and_policy():
    pool = CachePool("obs", 3)
    pool.update({0: "a", 2: "c"})
    assert pool[0] == "a" and pool[1] is None and pool[2] == "c"
    pool.update([{0: "p0"}, {0: "p1"}])  # one dict per policy (battle collectors)
    assert pool[0] == ["p0", "p1"]
    pool.reset(0)
    assert pool[0] is None
    deep = CachePool("obs", 1, deepcopy=True)
    item = {"x": [1]}
    deep.update({0: item})
    item["x"].append(2)
    assert deep[0] == {"x": [1]}


def test_traj_buffer_keeps_the_newest_maxlen_items():
    buf = TrajBuffer(maxlen=3)
    for i in range(5):
        buf.append(i)
    assert list(buf) == [2, 3, 4]
    unbounded = TrajBuffer(maxlen=float("inf"))
    for i in range(5):
        unbounded.append(i)
    assert len(unbounded) == 5


class HandWrittenCollector(ISerialCollector):
    """A collector written the way DI-engine's user collectors are: it calls the views itself."""

    def __init__(self, env, policy):
        self._env, self._policy = env, None
        self.reset(policy)

    def reset_env(self, _env=None):
        pass

    def reset_policy(self, _policy=None):
        if _policy is not None:
            self._policy = _policy

    def reset(self, _policy=None, _env=None):
        self.reset_policy(_policy)

    def collect(self):
        self._env.launch()
        obs = self._env.ready_obs
        out = self._policy.forward(obs)
        timesteps = self._env.step({i: o["action"] for i, o in out.items()})
        transitions = [self._policy.process_transition(obs[i], out[i], t) for i, t in timesteps.items()]
        return out, transitions

    @property
    def envstep(self):
        return 0


def _ppo():
    cfg = EasyDict(PPOPolicy.default_config())
    cfg.model = dict(obs_shape=4, action_shape=2, action_space="discrete")
    return PPOPolicy(cfg, model=VAC(obs_shape=4, action_shape=2, action_space="discrete"))


def test_a_hand_written_collector_gets_tensor_views_and_ding_collectors_numpy():
    policy = _ppo()
    env = BaseEnvManager([lambda: CartPoleEnv({}) for _ in range(2)], BaseEnvManager.default_config())
    try:
        out, transitions = HandWrittenCollector(env, policy.collect_mode).collect()
        assert all(isinstance(o["logit"], torch.Tensor) for o in out.values())  # DI-engine's convention
        assert len(transitions) == 2 and "obs" in transitions[0]
    finally:
        env.close()
    obs = {0: np.zeros(4, dtype=np.float32)}
    assert isinstance(policy.collect_mode.forward(obs)[0]["logit"], np.ndarray)  # ding's own views: numpy
    assert SampleSerialCollector.numpy_policy_views and not HandWrittenCollector.numpy_policy_views


def test_collect_print_freq_and_env_ref(in_tmp_dir):
    env = BaseEnvManager([lambda: CartPoleEnv({}) for _ in range(2)], BaseEnvManager.default_config())
    cfg = EasyDict(SampleSerialCollector.default_config(), collect_print_freq=7)
    collector = SampleSerialCollector(cfg, env, _ppo().collect_mode)
    try:
        assert collector._collect_print_freq == 7
    finally:
        collector.close()
    lazy = BaseEnvManager([lambda: CartPoleEnv({})], BaseEnvManager.default_config())
    ref = lazy._env_ref  # before launch: one env built from the first factory, kept
    assert isinstance(ref, CartPoleEnv) and lazy._env_ref is ref
    lazy.launch()
    assert lazy._env_ref is not ref  # launched: the manager's first env
    lazy.close()


def test_episode_collector_returns_exactly_n_episode(in_tmp_dir):
    """DI-engine's count: ``collect(n_episode=18)`` over 8 envs gives 18 episodes, not 24 (envs past the quota wait
    for the next call, their episodes are not cut)."""
    from ding.worker import EpisodeSerialCollector
    from tests.worker.test_collector import FakeCollectPolicy, make_env

    env = make_env(lengths=(3, 5, 4, 3, 6, 3, 5, 4))
    with EpisodeSerialCollector(EasyDict(), env, FakeCollectPolicy().mode(), exp_name="exp") as col:
        first = col.collect(n_episode=18)
        assert len(first) == 18
        second = col.collect(n_episode=8)
        assert len(second) == 8
        for ep in first + second:  # every episode whole, from its first step
            assert int(ep[0]["obs"][1]) == 0 and ep[-1]["done"] and not any(t["done"] for t in ep[:-1])


def test_connect_timeout_is_accepted_and_raises_the_reset_limit():
    from ding.envs import SyncSubprocessEnvManager

    base = BaseEnvManager([lambda: CartPoleEnv({})], dict(connect_timeout=60))  # DI-engine's key: accepted
    assert base.env_num == 1
    cfg = dict(connect_timeout=300, reset_timeout=120.0, shared_memory=False)
    manager = SyncSubprocessEnvManager([lambda: CartPoleEnv({})], cfg)
    try:
        assert manager._reset_timeout == 300.0
    finally:
        manager.close()
