"""Checks that a user's env keeps the :class:`~ding.envs.env.BaseEnv` contract (DI-engine's env checker): what
``reset`` and ``step`` return lies in the declared spaces with their dtypes, and observations of different steps do
not share memory (a collector keeps them side by side). Each check raises ``AssertionError`` naming what broke.

    from ding.envs.env import check_all, demonstrate_correct_procedure
    check_all(MyEnv(cfg))
    demonstrate_correct_procedure(MyEnv)

Spaces may be gym's or gymnasium's (anything with ``contains``; ``Dict`` / ``Tuple`` spaces through ``.spaces``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .base_env import BaseEnv


def _subspaces(space: Any) -> Any:
    """The children of a composite space (a mapping or a sequence), or None for a leaf space."""
    if isinstance(space, (Mapping, list, tuple)):
        return space
    inner = getattr(space, "spaces", None)
    return inner if isinstance(inner, (Mapping, list, tuple)) else None


def check_array_space(ndarray: Any, space: Any, name: str) -> None:
    """``ndarray`` (an array, or a dict / sequence of them) lies in ``space`` with the space's dtype; TypeError for data
    that is neither."""
    data = ndarray
    if isinstance(data, np.ndarray):
        dtype = getattr(space, "dtype", None)
        assert dtype is None or data.dtype == dtype, f"{name}: dtype {data.dtype}, the space's is {dtype}"
        assert space.contains(data), f"{name}: {data!r} is not in its space {space}"
        return
    children = _subspaces(space)
    if isinstance(data, Mapping):
        assert isinstance(children, Mapping), f"{name}: a dict where the space is {space}"
        assert set(data) == set(children), f"{name}: keys {sorted(data)}, the space's {sorted(children)}"
        for key, value in data.items():
            check_array_space(value, children[key], f"{name}.{key}")
        return
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        assert isinstance(children, (list, tuple)), f"{name}: a sequence where the space is {space}"
        assert len(data) == len(children), f"{name}: {len(data)} items, the space has {len(children)}"
        for i, (value, sub) in enumerate(zip(data, children)):
            check_array_space(value, sub, f"{name}[{i}]")
        return
    raise TypeError(f"{name}: {type(data).__name__} is not an array, a dict or a sequence of them")


def check_different_memory(array1: Any, array2: Any, step_times: int) -> None:
    """No array of ``array1`` shares memory with its counterpart in ``array2`` (two steps' observations)."""
    where = f"observations of step {step_times} and the one before"
    if isinstance(array1, np.ndarray) or isinstance(array2, np.ndarray):
        assert isinstance(array1, np.ndarray) and isinstance(array2, np.ndarray), \
            f"{where}: an array against a {type(array2 if isinstance(array1, np.ndarray) else array1).__name__}"
        assert not np.shares_memory(array1, array2), f"{where} share memory: copy the observation"
        return
    if isinstance(array1, Mapping) or isinstance(array2, Mapping):
        assert isinstance(array1, Mapping) and isinstance(array2, Mapping) and set(array1) == set(array2), \
            f"{where}: not dicts of the same keys"
        for key in array1:
            check_different_memory(array1[key], array2[key], step_times)
        return
    if isinstance(array1, (list, tuple)) or isinstance(array2, (list, tuple)):
        assert isinstance(array1, (list, tuple)) and isinstance(array2, (list, tuple)) and \
            len(array1) == len(array2), f"{where}: not sequences of one length"
        for a, b in zip(array1, array2):
            check_different_memory(a, b, step_times)
        return
    raise TypeError(f"{where}: {type(array1).__name__} and {type(array2).__name__} are not arrays, dicts or "
                    "sequences of them")


def check_space_dtype(env: BaseEnv) -> None:
    """``reset`` gives an observation, and a random step an observation and a reward, in the declared spaces."""
    obs = env.reset()
    check_array_space(obs, env.observation_space, "observation after reset")
    timestep = env.step(env.random_action())
    check_array_space(timestep.obs, env.observation_space, "observation after a step")
    reward_space = getattr(env, "reward_space", None)
    if reward_space is not None:
        check_array_space(np.asarray(timestep.reward), reward_space, "reward")


def check_reset(env: BaseEnv) -> None:
    """``reset`` twice gives observations in the observation space."""
    for _ in range(2):
        check_array_space(env.reset(), env.observation_space, "observation after reset")


def check_step(env: BaseEnv, max_steps: int = 10_000) -> None:
    """An episode of random actions ends within ``max_steps`` with every step's timestep well formed."""
    env.reset()
    for _ in range(max_steps):
        timestep = env.step(env.random_action())
        check_array_space(timestep.obs, env.observation_space, "observation after a step")
        assert isinstance(timestep.info, dict), f"info must be a dict, got {type(timestep.info).__name__}"
        if timestep.done:
            return
    raise AssertionError(f"no episode end within {max_steps} random steps")


def check_obs_deepcopy(env: BaseEnv, steps: int = 3) -> None:
    """Observations of successive steps are different arrays in memory."""
    previous = env.reset()
    for step in range(1, steps + 1):
        timestep = env.step(env.random_action())
        check_different_memory(previous, timestep.obs, step)
        if timestep.done:
            previous = env.reset()
        else:
            previous = timestep.obs


def check_all(env: BaseEnv) -> None:
    """Every check above on ``env``; it is reset (and stepped) many times but not closed."""
    check_space_dtype(env)
    check_reset(env)
    check_step(env)
    check_obs_deepcopy(env)


def demonstrate_correct_procedure(env_fn: Callable[[dict], BaseEnv]) -> None:
    """The life of an env as the collectors drive it: made from a config, seeded, reset, stepped to the end of an
    episode, reset again, closed, and reset after closing (which starts it again)."""
    env = env_fn({})
    try:
        env.seed(0)
        for _ in range(2):
            env.reset()
            while not env.step(env.random_action()).done:
                pass
        env.close()
        env.reset()
    finally:
        env.close()
