"""Small pieces the env managers share: env states, config checks, observation checks, pickling envs."""
from __future__ import annotations

import difflib
import enum
import pickle
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
from easydict import EasyDict

from ding.config.ranges import check_ranges, ranges_of
from ding.utils import ConfigError, EnvError, config_of, deep_merge_dicts

from ..env.base_env import BaseEnv, BaseEnvTimestep

# Keys of the other built-in managers: accepted (and ignored) so one ``env.manager`` dict works for every type.
_OTHER_MANAGER_KEYS = frozenset({"shared_memory", "context", "wait_num", "step_wait_timeout", "connect_timeout"})
_META_KEYS = frozenset({"type", "import_names", "cfg_type"})
# pickle errors an unpicklable env raises
_PICKLE_ERRORS = (pickle.PicklingError, TypeError, AttributeError)


class EnvState(enum.IntEnum):
    VOID = 0  # not launched, or closed
    INIT = 1  # created, not reset yet
    RUN = 2  # has an observation and waits for an action (or, async, is stepping)
    RESET = 3  # being reset
    DONE = 4  # finished its ``episode_num`` episodes
    ERROR = 5  # failed beyond ``max_retry``
    NEED_RESET = 6  # episode over with ``auto_reset=False``: waits for ``reset({env_id: ...})``


_M = TypeVar("_M", bound="ManagerSurface")


class ManagerSurface:
    """The read-only surface every env manager shows, over the state each keeps the same way: ``_env_num``,
    ``_closed``, ``_ready_obs`` (``{env_id: obs}``), ``_env_states`` and ``_get_spaces()`` (observation, action and
    reward space, built on first use). One copy for the in-process, subprocess and envpool managers."""

    config: dict[str, Any]
    _env_num: int
    _closed: bool
    _ready_obs: dict[int, Any]
    _env_states: list[EnvState]

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    @property
    def env_num(self) -> int:
        return self._env_num

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def ready_obs(self) -> dict[int, Any]:
        """``{env_id: obs}`` of every env waiting for an action, in env id order (so a batch built from it, and any
        random draws made per entry, do not depend on which worker answered first)."""
        self._check_open()
        return dict(sorted(self._ready_obs.items()))

    @property
    def ready_obs_id(self) -> list[int]:
        self._check_open()
        return sorted(self._ready_obs)

    @property
    def done(self) -> bool:
        """True when every env has finished ``episode_num`` episodes."""
        return all(s == EnvState.DONE for s in self._env_states)

    @property
    def env_states(self) -> list[EnvState]:
        return list(self._env_states)

    @property
    def observation_space(self) -> Any:
        return self._get_spaces()[0]

    @property
    def action_space(self) -> Any:
        return self._get_spaces()[1]

    @property
    def reward_space(self) -> Any:
        return self._get_spaces()[2]

    def _get_spaces(self) -> tuple[Any, Any, Any]:
        raise NotImplementedError

    def __enter__(self: _M) -> _M:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise EnvError(f"{type(self).__name__}: the env manager is not running; call launch() first")


def obs_shape_of(space: Any) -> tuple[int, ...] | None:
    """The fixed shape every observation must have, or None when the space has none to check (Dict, Tuple, ...)."""
    shape = getattr(space, "shape", None)
    return tuple(shape) if shape is not None and getattr(space, "is_np_flattenable", False) else None


def shape_error(env_id: int, op: str, space: Any, expected: tuple, got: Any) -> EnvError:
    return EnvError(
        f"env {env_id}: {op}() returned an observation of shape {got}, but its observation_space {space} expects "
        f"{expected}. Fix the env's observation or its observation_space."
    )


def check_manager_cfg(manager: Any, cfg: Mapping | None) -> EasyDict:
    """``cfg`` merged over the manager's defaults; unknown keys and bad values raise ``ConfigError``."""
    cfg = dict(cfg or {})
    name = type(manager).__name__
    bad = [k for k in cfg if k not in manager.config and k not in _META_KEYS and k not in _OTHER_MANAGER_KEYS]
    if bad:
        lines = []
        for k in bad:
            close = difflib.get_close_matches(k, sorted(manager.config), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            lines.append(f"env.manager.{k}: unknown key for {name}{hint}")
        raise ConfigError("\n".join(lines) + f"\nValid keys: {', '.join(sorted(manager.config))}")
    merged = deep_merge_dicts(manager.default_config(), cfg)
    check_ranges(merged, ranges_of(type(manager)), "env.manager")
    return merged


def abnormal_timestep(last_obs: Any, error_text: str) -> BaseEnvTimestep:
    """The timestep reported for a step that failed: ``done`` with ``info['abnormal']`` (collectors drop it)."""
    return BaseEnvTimestep(last_obs, np.zeros(1, dtype=np.float32), True, {"abnormal": True, "error": error_text})


def apply_seed(env: BaseEnv, seed: tuple[int, bool | None]) -> None:
    s, dynamic = seed
    if dynamic is None:
        env.seed(s)
    else:
        env.seed(s, dynamic)


def pickle_env(env_id: int, env: Any) -> bytes:
    try:
        return pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)
    except _PICKLE_ERRORS as e:
        raise EnvError(
            f"env {env_id}: cannot pickle {env!r} ({type(e).__name__}: {e}), so state_dict() cannot save it and a "
            "resumed run cannot restore it mid-episode. Make the env picklable (e.g. define __getstate__/__setstate__)."
        ) from e
