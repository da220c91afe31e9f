"""The classic ``gym`` package's envs (0.21-0.26, what DI-engine's users' files ``gym.make``) seen as gymnasium 1.x
envs, so :class:`~ding.envs.DingEnvWrapper` takes them as they are.

Spaces are rebuilt as gymnasium spaces; ``reset`` returns ``(obs, info)`` (an old ``reset()`` that returns only the
observation gets an empty info; a seed goes to ``reset(seed=...)`` or, for old envs, ``env.seed(...)``); ``step``
returns the five values, an old four-value ``(obs, reward, done, info)`` split by ``info['TimeLimit.truncated']``
into terminated and truncated. Nothing here imports ``gym``: an env is recognised by its class's module.
"""
from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np


def is_classic_gym_env(env: Any) -> bool:
    """Whether ``env`` is an env of the classic ``gym`` package (not gymnasium)."""
    if isinstance(env, gymnasium.Env):
        return False
    return any(c.__module__ == "gym" or c.__module__.startswith("gym.") for c in type(env).__mro__)


def convert_space(space: Any) -> gymnasium.spaces.Space:
    """The gymnasium space equal to a classic gym space (Box, Discrete, MultiDiscrete, MultiBinary, Tuple, Dict)."""
    name = type(space).__name__
    if name == "Box":
        return gymnasium.spaces.Box(space.low, space.high, space.shape, space.dtype)
    if name == "Discrete":
        return gymnasium.spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if name == "MultiDiscrete":
        return gymnasium.spaces.MultiDiscrete(np.asarray(space.nvec))
    if name == "MultiBinary":
        return gymnasium.spaces.MultiBinary(space.n)
    if name == "Tuple":
        return gymnasium.spaces.Tuple([convert_space(s) for s in space.spaces])
    if name == "Dict":
        return gymnasium.spaces.Dict({k: convert_space(s) for k, s in space.spaces.items()})
    raise TypeError(f"classic gym env: cannot convert its space {space!r} to a gymnasium space")


def _skip_passive_checker_step(env: Any) -> None:
    """gym 0.26's ``PassiveEnvChecker`` (which ``gym.make`` adds) checks the first step with ``np.bool8``, gone in
    numpy 2; mark that first-step check done (it only checks types, later steps skip it anyway)."""
    layer = env
    while layer is not None:
        if type(layer).__name__ == "PassiveEnvChecker":
            layer.checked_step = True
        layer = getattr(layer, "env", None) if layer is not getattr(layer, "env", None) else None


class ClassicGymEnv(gymnasium.Env):
    """A classic gym env behind gymnasium's API (see the module docstring)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        if not hasattr(np, "bool8"):
            _skip_passive_checker_step(env)
        self.observation_space = convert_space(env.observation_space)
        self.action_space = convert_space(env.action_space)
        self.render_mode = getattr(env, "render_mode", None)
        self.reward_range = getattr(env, "reward_range", (-float("inf"), float("inf")))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        try:
            out = self.env.reset(seed=seed) if seed is not None else self.env.reset()
        except TypeError:  # gym < 0.22: reset() takes no seed
            if seed is not None and hasattr(self.env, "seed"):
                self.env.seed(seed)
            out = self.env.reset()
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            return out[0], out[1]
        return out, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        out = self.env.step(action)
        if len(out) == 5:
            obs, reward, terminated, truncated, info = out
            return obs, reward, bool(terminated), bool(truncated), dict(info)
        obs, reward, done, info = out
        truncated = bool(info.get("TimeLimit.truncated", False))
        return obs, reward, bool(done) and not truncated, truncated, dict(info)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __getattr__(self, name: str) -> Any:  # the wrapped env's own attributes (e.g. a demo's optimal_policy)
        if name.startswith("__") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)
