"""Acrobot-v1: obs float32 (6,), Discrete(3), reward -1 per step, 500-step episodes."""
from __future__ import annotations

import gymnasium as gym
from gymnasium.envs.classic_control.acrobot import AcrobotEnv as _GymAcrobot

from ding.envs import DingEnvWrapper
from ding.utils import ENV_REGISTRY


@ENV_REGISTRY.register("acrobot")
class AcroBotEnv(DingEnvWrapper):
    """gymnasium's Acrobot built directly; the wrapper applies the time limit."""

    config = dict(
        DingEnvWrapper.config,
        env_id="Acrobot-v1",  # only names the env here; it is always built from gymnasium's Acrobot class
        max_episode_steps=500,  # Acrobot-v1's time limit
    )

    def __init__(self, cfg: dict | None = None) -> None:
        super().__init__(env=None, cfg=cfg)

    def _make_env(self, render_mode: str | None = None) -> gym.Env:
        return self._apply_wrappers(_GymAcrobot(render_mode=render_mode or self._cfg.render_mode))
