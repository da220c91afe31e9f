"""Acrobot-v1: obs float32 (6,), Discrete(3), reward -1 per step, 500-step episodes."""
from __future__ import annotations

from gymnasium.envs.classic_control.acrobot import AcrobotEnv as _GymAcrobot

from ding.envs import DingEnvWrapper
from ding.utils import ENV_REGISTRY


@ENV_REGISTRY.register("acrobot")
class AcroBotEnv(DingEnvWrapper):
    """gymnasium's Acrobot built directly; the wrapper applies the time limit."""

    gym_env_cls = _GymAcrobot
    config = dict(
        DingEnvWrapper.config,
        env_id="Acrobot-v1",  # only names the env here; it is always built from gymnasium's Acrobot class
        max_episode_steps=500,  # Acrobot-v1's time limit
    )
