"""LunarLander-v3 (box2d, an optional extra): obs float32 (8,), Discrete(4) or, with ``continuous``, Box(2,)."""
from __future__ import annotations

import gymnasium as gym

from ding.envs import DingEnvWrapper
from ding.utils import ENV_REGISTRY, EnvError


@ENV_REGISTRY.register("lunarlander")
class LunarLanderEnv(DingEnvWrapper):
    """gymnasium's LunarLander built directly. Needs box2d: ``pip install 'ding[box2d]'``."""

    config = dict(
        DingEnvWrapper.config,
        env_id="LunarLander-v3",  # only names the env here; it is always built from gymnasium's LunarLander class
        max_episode_steps=1000,  # LunarLander-v3's time limit
        continuous=False,  # True: Box(-1, 1, (2,)) engine throttles instead of 4 discrete actions
    )

    def __init__(self, cfg: dict | None = None) -> None:
        super().__init__(env=None, cfg=cfg)

    def _make_env(self, render_mode: str | None = None) -> gym.Env:
        try:
            from gymnasium.envs.box2d.lunar_lander import LunarLander
        except (ImportError, gym.error.DependencyNotInstalled) as e:
            raise EnvError(
                f"LunarLanderEnv needs box2d, which is not installed ({e}). Install it with: pip install 'ding[box2d]'"
            ) from e
        env = LunarLander(render_mode=render_mode or self._cfg.render_mode, continuous=bool(self._cfg.continuous))
        return self._apply_wrappers(env)
