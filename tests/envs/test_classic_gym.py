"""DI-engine users' ``DingEnvWrapper(gym.make(...))`` with the classic ``gym`` package, an env class without a
``render_mode`` argument, and the error for a user module that imports ``gym`` when it is not installed."""
from __future__ import annotations

import sys

import gymnasium
import numpy as np
import pytest
from easydict import EasyDict

from ding.envs import DingEnvWrapper
from ding.envs.env.classic_gym import ClassicGymEnv, convert_space, is_classic_gym_env
from ding.utils.import_errors import missing_ding_name


class OldApiEnv:
    """A gym 0.21-style env: reset() -> obs, step() -> 4 values, time limit in info."""

    __module__ = "gym.envs.fake"

    def __init__(self, limit=3):
        import gymnasium.spaces as s

        self.observation_space, self.action_space = s.Box(-1.0, 1.0, (2,), np.float64), s.Discrete(2)
        self.limit, self.t, self.seeded = limit, 0, None

    def seed(self, seed):
        self.seeded = seed

    def reset(self):
        self.t = 0
        return np.zeros(2)

    def step(self, action):
        self.t += 1
        return np.ones(2) * self.t, 1.0, self.t >= self.limit, {"TimeLimit.truncated": self.t >= self.limit}

    def close(self):
        pass


def test_old_step_api_is_converted_and_time_limits_are_truncations():
    raw = OldApiEnv()
    assert is_classic_gym_env(raw) and not is_classic_gym_env(gymnasium.make("CartPole-v1"))
    env = DingEnvWrapper(raw, EasyDict(env_wrapper="default"))
    env.seed(5, dynamic_seed=False)
    obs = env.reset()
    assert obs.dtype == np.float32 and raw.seeded == 5  # an old env is seeded through env.seed
    steps = [env.step(np.array(0)) for _ in range(3)]
    assert [t.done for t in steps] == [False, False, True] and steps[-1].info["truncated"]
    assert steps[-1].info["eval_episode_return"] == pytest.approx(3.0)


def test_classic_gym_cartpole_runs_through_ding_env_wrapper():
    gym = pytest.importorskip("gym", reason="the gym extra (pip install 'ding[gym]') is not installed")
    env = DingEnvWrapper(gym.make("CartPole-v1"), EasyDict(env_wrapper="default"))
    try:
        assert isinstance(env.action_space, gymnasium.spaces.Discrete)  # converted: ding's checks see gymnasium
        env.seed(0)
        obs, n = env.reset(), 0
        assert obs.shape == (4,) and obs.dtype == np.float32
        while True:
            n += 1
            ts = env.step(np.array(1))
            if ts.done:
                break
        assert 5 <= n < 100 and ts.info["eval_episode_return"] == pytest.approx(n) and not ts.info["truncated"]
    finally:
        env.close()


def test_spaces_convert_and_unknown_ones_are_named():
    gym = pytest.importorskip("gym", reason="the gym extra (pip install 'ding[gym]') is not installed")
    space = gym.spaces.Dict({"a": gym.spaces.MultiDiscrete([2, 3]), "b": gym.spaces.Tuple([gym.spaces.MultiBinary(4)])})
    assert convert_space(space) == gymnasium.spaces.Dict(
        {"a": gymnasium.spaces.MultiDiscrete([2, 3]), "b": gymnasium.spaces.Tuple([gymnasium.spaces.MultiBinary(4)])})
    with pytest.raises(TypeError, match="cannot convert its space"):
        convert_space(object())
    assert isinstance(ClassicGymEnv(OldApiEnv()).reset(seed=1), tuple)


class NoRenderModeEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self):  # no render_mode argument, as many hand-written envs
        super().__init__()


class NoRenderModeWrapper(DingEnvWrapper):
    gym_env_cls = NoRenderModeEnv


def test_env_class_without_render_mode_argument_builds():
    env = NoRenderModeWrapper(cfg=EasyDict())
    assert isinstance(env._env, NoRenderModeEnv)
    env.close()


def test_missing_gym_error_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "gym", None)
    try:
        import gym  # noqa: F401
    except ModuleNotFoundError as e:
        message = missing_ding_name(e)
    assert "pip install 'ding[gym]'" in message and "import gymnasium as gym" in message
