"""Pendulum-v1 with continuous Box(1,) actions; ``act_scale=True`` maps actions in [-1, 1] onto the torque [-2, 2]."""
from __future__ import annotations

from gymnasium.envs.classic_control.pendulum import PendulumEnv as _GymPendulum

from ding.envs import DingEnvWrapper
from ding.utils import ENV_REGISTRY


@ENV_REGISTRY.register("pendulum")
class PendulumEnv(DingEnvWrapper):
    """gymnasium's Pendulum built directly; 200-step episodes that only end by truncation."""

    gym_env_cls = _GymPendulum
    gym_env_cfg_keys = ("g",)
    config = dict(
        DingEnvWrapper.config,
        env_id="Pendulum-v1",  # only names the env here; it is always built from gymnasium's Pendulum class
        max_episode_steps=200,  # Pendulum-v1's time limit
        act_scale=True,  # the agent acts in [-1, 1] (action_space is Box(-1, 1, (1,))), scaled onto [-2, 2]
        g=10.0,  # gravity
    )
