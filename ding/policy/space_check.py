"""Does the policy fit the env? One check every pipeline runs at set-up, right after it built the env managers and
the policy (before any env is launched or any step is taken)."""
from __future__ import annotations

from typing import Any

from ding.utils import ConfigError

from .base_policy import Policy


def check_policy_fits_env(policy: Policy, env: Any, env_name: str | None = None) -> None:
    """Raise one ``ConfigError`` if the env's spaces do not suit ``policy``.

    ``env`` is an env manager (or an env): anything with ``observation_space`` and ``action_space``. Checked: the
    action space kind the policy class accepts (``Policy.action_space_types``), and the model's ``obs_shape`` /
    ``action_shape`` (from ``policy.model`` in the config, else the model's attributes) against the spaces' shapes,
    and, for a policy that declares ``action_bounds`` (its actions lie in ``[low, high]``, e.g. (-1, 1) for the
    tanh actors of SAC/DDPG/TD3), that a Box action space has exactly those bounds (``env.act_scale=True`` maps
    them onto the env's own).
    """
    if getattr(policy, "multi_agent", False):  # MAPPO, QMIX/VDN, MASAC: the agent axis has its own check
        from .multi_agent_data import require_multi_agent_fit

        return require_multi_agent_fit(policy, env, env_name)
    obs_space, act_space = env.observation_space, env.action_space
    cfg, model = policy._get_attribute("cfg"), policy._get_attribute("model")
    name = f"env '{env_name}'" if env_name else "the env"
    problems = []
    kinds = policy.action_space_types  # a class attribute, or an instance's (e.g. from policy.action_space)
    if kinds is not None and act_space is not None and not isinstance(act_space, kinds):
        wanted = " or ".join(k.__name__ for k in kinds)
        if kinds != type(policy).action_space_types and cfg.get("action_space") is not None:
            fix = ("set policy.action_space (and policy.model.action_space) to the env's kind: 'continuous' for "
                   "Box, 'discrete' for Discrete")
            problems.append(f"policy.action_space: {cfg.action_space!r} makes {type(policy).__name__} act in a "
                            f"{wanted} action space, but {name} has {act_space}; {fix}")
        else:
            problems.append(
                f"policy.type: {type(policy).__name__} ({cfg.get('type')!r}) needs a {wanted} action space, but "
                f"{name} has {act_space}. Use a policy made for this action space, or an env with {wanted} actions"
            )
    else:
        problems += _shape_problems("obs_shape", cfg, model, _obs_shape(obs_space), obs_space, name)
        problems += _shape_problems("action_shape", cfg, model, _action_shape(act_space), act_space, name)
        problems += _bounds_problems(policy, cfg, act_space, name)
    if problems:
        raise ConfigError("\n".join(problems))


def _as_tuple(shape: Any) -> tuple[int, ...] | None:
    if isinstance(shape, (int,)) and not isinstance(shape, bool):
        return (shape,)
    if isinstance(shape, (list, tuple)) and all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        return tuple(shape)
    return None  # not a shape (create_model already refused such config values)


def _obs_shape(space: Any) -> tuple[int, ...] | None:
    shape = getattr(space, "shape", None)
    return tuple(int(s) for s in shape) if shape else None


def _action_shape(space: Any) -> tuple[int, ...] | None:
    """What ``model.action_shape`` must be: n for Discrete(n), nvec for MultiDiscrete, the shape of a Box."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return (int(space.n),)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return tuple(int(n) for n in space.nvec)
    if isinstance(space, gym.spaces.Box):
        return tuple(int(s) for s in space.shape)
    return None


def _shape_problems(key: str, cfg: Any, model: Any, expected: tuple[int, ...] | None, space: Any,
                    name: str) -> list[str]:
    value = (cfg.get("model") or {}).get(key)
    where = f"policy.model.{key}"
    if value is None:
        value = getattr(model, key, None)
        where = f"the model's {key} ({type(model).__name__}.{key})"
    got = _as_tuple(value)
    if expected is None or got is None or got == expected:
        return []
    suggestion = expected[0] if len(expected) == 1 else list(expected)
    kind = "observation" if key == "obs_shape" else "action"
    return [f"{where}: {value!r} does not match the {kind} space of {name}, {space} (expects {suggestion!r}); "
            f"set policy.model.{key}={suggestion!r}"]


def _bounds_problems(policy: Policy, cfg: Any, space: Any, name: str) -> list[str]:
    """A policy acting in ``action_bounds`` needs a Box with exactly those bounds (the env scales them)."""
    import gymnasium as gym
    import numpy as np

    bounds = getattr(type(policy), "action_bounds", None)
    if bounds is None or not isinstance(space, gym.spaces.Box):
        return []
    low, high = bounds
    if np.all(space.low == low) and np.all(space.high == high):
        return []
    return [f"policy.type: {type(policy).__name__} ({cfg.get('type')!r}) acts in [{low:g}, {high:g}], but {name} "
            f"has {space} (bounds {space.low.tolist()} .. {space.high.tolist()}). Set env.act_scale=True so the env "
            f"maps [{low:g}, {high:g}] onto its bounds"]
