"""CartPole with CartPole-v0 semantics: 200-step episodes (the time limit truncates), obs float32 (4,), Discrete(2)."""
from __future__ import annotations

from gymnasium.envs.classic_control.cartpole import CartPoleEnv as _GymCartPole

from ding.envs import DingEnvWrapper
from ding.utils import ENV_REGISTRY


@ENV_REGISTRY.register("cartpole")
class CartPoleEnv(DingEnvWrapper):
    """gymnasium's CartPole built directly (no ``gym.make`` wrapper layers); the wrapper applies the time limit."""

    gym_env_cls = _GymCartPole
    config = dict(
        DingEnvWrapper.config,
        env_id="CartPole-v0",  # only names the env here; it is always built from gymnasium's CartPole class
        max_episode_steps=200,  # CartPole-v0: episodes are truncated after 200 steps (v1 uses 500)
    )
