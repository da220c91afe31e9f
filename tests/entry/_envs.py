"""Faulty envs for pipeline tests."""
from __future__ import annotations

import numpy as np

from ding.utils import ENV_REGISTRY
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv


@ENV_REGISTRY.register("test_wrong_obs_shape_cartpole")
class WrongObsShapeCartPole(CartPoleEnv):
    """Declares a (4,) observation space but returns (5,) observations after the first step."""

    def step(self, action):
        ts = super().step(action)
        return ts._replace(obs=np.concatenate([ts.obs, np.zeros(1, np.float32)]))
