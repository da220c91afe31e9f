"""Faulty envs for pipeline tests."""
from __future__ import annotations

import threading

import numpy as np

from ding.utils import ENV_REGISTRY
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv


@ENV_REGISTRY.register("test_wrong_obs_shape_cartpole")
class WrongObsShapeCartPole(CartPoleEnv):
    """Declares a (4,) observation space but returns (5,) observations after the first step."""

    def step(self, action):
        ts = super().step(action)
        return ts._replace(obs=np.concatenate([ts.obs, np.zeros(1, np.float32)]))


RELEASE_HUNG_RESETS = threading.Event()  # set by tests to let abandoned resets return


@ENV_REGISTRY.register("test_hanging_reset_cartpole")
class HangingResetCartPole(CartPoleEnv):
    """A reset never finishes until ``RELEASE_HUNG_RESETS`` is set."""

    def reset(self):
        RELEASE_HUNG_RESETS.wait()
        return super().reset()


@ENV_REGISTRY.register("test_nan_reward_cartpole")
class NaNRewardCartPole(CartPoleEnv):
    """Rewards turn NaN after 150 steps of each env (a broken reward function)."""

    def step(self, action):
        ts = super().step(action)
        self._steps = getattr(self, "_steps", 0) + 1
        return ts._replace(reward=np.full(1, np.nan, np.float32)) if self._steps > 150 else ts
