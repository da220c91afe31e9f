"""MountainCar-v0: obs float32 (2,), Discrete(3), reward -1 per step, 200-step episodes."""
from __future__ import annotations

from gymnasium.envs.classic_control.mountain_car import MountainCarEnv as _GymMountainCar

from ding.envs import DingEnvWrapper
from ding.utils import ENV_REGISTRY


@ENV_REGISTRY.register("mountain_car")
class MountainCarEnv(DingEnvWrapper):
    """gymnasium's MountainCar built directly; the wrapper applies the time limit."""

    gym_env_cls = _GymMountainCar
    config = dict(
        DingEnvWrapper.config,
        env_id="MountainCar-v0",  # only names the env here; it is always built from gymnasium's MountainCar class
        max_episode_steps=200,  # MountainCar-v0's time limit
    )
