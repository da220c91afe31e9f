"""DI-engine's env checker (``ding.envs.env.check_all`` and friends) on a user's env with gymnasium spaces."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding.envs.env import (
    BaseEnv,
    BaseEnvTimestep,
    check_all,
    check_array_space,
    check_different_memory,
    check_obs_deepcopy,
    demonstrate_correct_procedure,
)


class _Env(BaseEnv):
    def __init__(self, cfg: dict, reuse_obs: bool = False, obs_dtype=np.float32) -> None:
        self._reuse, self._dtype, self._t, self._buf = reuse_obs, obs_dtype, 0, np.zeros(3, obs_dtype)
        self.closed = 0

    observation_space = gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
                                         "goal": gym.spaces.Tuple([gym.spaces.Box(0, 5, (1,), np.int64)])})
    action_space = gym.spaces.Discrete(2)
    reward_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)

    def _obs(self):
        pos = self._buf if self._reuse else np.zeros(3, self._dtype)
        return {"pos": pos, "goal": (np.array([self._t % 5]),)}

    def reset(self):
        self._t = 0
        return self._obs()

    def step(self, action):
        self._t += 1
        return BaseEnvTimestep(self._obs(), np.array([0.5], np.float32), self._t >= 7, {})

    def seed(self, seed, dynamic_seed=True):
        self._seed = seed

    def close(self):
        self.closed += 1

    def random_action(self):
        return self.action_space.sample()

    def __repr__(self):
        return "checked env"


def test_a_correct_env_passes_every_check_and_the_demonstration():
    check_all(_Env({}))
    made = []
    demonstrate_correct_procedure(lambda cfg: made.append(_Env(cfg)) or made[-1])
    assert made[0].closed >= 1


def test_each_broken_contract_is_named():
    with pytest.raises(AssertionError, match="share memory"):
        check_obs_deepcopy(_Env({}, reuse_obs=True))
    with pytest.raises(AssertionError, match=r"observation after reset\.pos: dtype float64"):
        check_all(_Env({}, obs_dtype=np.float64))
    box = gym.spaces.Box(0, 10, (3,), np.int64)
    with pytest.raises(AssertionError, match=r"s\[1\]: dtype float32"):
        check_array_space((np.array([1, 2, 3]), np.array([4.0, 5.0, 6.0], np.float32)), [box, box], "s")
    with pytest.raises(TypeError, match="not an array"):
        check_array_space(1, {"a": box}, "x")
    shared = np.zeros(2)
    with pytest.raises(AssertionError, match="share memory"):
        check_different_memory({"a": shared}, {"a": shared}, 4)
    with pytest.raises(TypeError):
        check_different_memory(1, 2, 0)
