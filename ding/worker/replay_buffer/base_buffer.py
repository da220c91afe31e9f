"""The replay-buffer interface, config resolution, and the factory that builds a buffer from its config."""
from __future__ import annotations

import difflib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding.utils import BUFFER_REGISTRY, ConfigError, config_of, deep_merge_dicts, import_module

# Keys any component config may carry without declaring them (plugin imports, free-form extras).
_FREE_KEYS = frozenset({"import_names", "ext_args"})


class IBuffer(ABC):
    """What every replay buffer offers the pipelines.

    Subclasses declare ``config = dict(...)`` with every key they read (a comment beside each default) and register
    themselves in ``BUFFER_REGISTRY``.
    """

    config: dict = dict()

    @classmethod
    def default_config(cls) -> EasyDict:
        """A fresh deep copy of ``cls.config`` plus ``cfg_type``."""
        return config_of(cls)

    @abstractmethod
    def push(self, data: Any, cur_collector_envstep: int) -> None:
        """Store one item or a list of items."""

    @abstractmethod
    def update(self, info: Mapping[str, Any] | None) -> None:
        """Take feedback from the learner (e.g. new priorities); buffers without feedback ignore it."""

    @abstractmethod
    def sample(self, size: int, cur_learner_iter: int) -> list | None:
        """Return ``size`` items, or None (with a logged reason) when the buffer cannot serve that many yet."""

    @abstractmethod
    def clear(self) -> None:
        """Drop every item (counters that identify items keep counting)."""

    @abstractmethod
    def count(self) -> int:
        """Number of items that can be sampled now."""

    @abstractmethod
    def save_data(self, file_name: str) -> None:
        """Write the stored items to ``file_name`` (atomically)."""

    @abstractmethod
    def load_data(self, file_name: str) -> None:
        """Push the items stored in ``file_name`` (written by :meth:`save_data`)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: contents, counters, priorities, the buffer's RNG."""

    @abstractmethod
    def load_state_dict(self, _state_dict: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""

    def start(self) -> None:
        """Nothing runs in the background; kept for DI-engine's call sequence."""

    def close(self) -> None:
        """Release the buffer. Calling it again is harmless."""

    def __enter__(self) -> IBuffer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        return self.count()


def resolve_buffer_config(cls: type[IBuffer], cfg: Mapping[str, Any] | None) -> EasyDict:
    """Merge ``cfg`` over ``cls.default_config()``; an unknown key raises ``ConfigError`` with a suggestion."""
    if cfg is not None and not isinstance(cfg, Mapping):
        raise ConfigError(f"{cls.__name__}: cfg must be a dict (e.g. cfg.policy.other.replay_buffer), "
                          f"got {type(cfg).__name__}")
    defaults = cls.default_config()
    problems = _unknown_keys(cfg or {}, defaults, "")
    if problems:
        raise ConfigError(f"{cls.__name__} config:\n" + "\n".join(problems))
    return deep_merge_dicts(defaults, cfg)


def _unknown_keys(user: Mapping, schema: Mapping, prefix: str) -> list[str]:
    problems = []
    for key, value in user.items():
        path = f"{prefix}{key}"
        if key in _FREE_KEYS:
            continue
        if key not in schema:
            close = difflib.get_close_matches(str(key), [str(k) for k in schema], n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else f"; valid keys: {', '.join(sorted(map(str, schema)))}"
            problems.append(f"{path}: unknown key{hint}")
        elif isinstance(value, Mapping) and isinstance(schema[key], Mapping) and schema[key]:
            problems.extend(_unknown_keys(value, schema[key], path + "."))
    return problems


def make_rng(seed: int | None) -> np.random.Generator:
    """The buffer's own generator: from ``seed``, or drawn from numpy's global RNG (so ``set_pkg_seed`` fixes it)."""
    if seed is None:
        return np.random.default_rng([int(x) for x in np.random.randint(0, 2**31 - 1, size=4)])
    return np.random.default_rng(seed)


def check_sample_size(owner: str, size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"{owner}.sample: size must be a non-negative int, got {size!r}")
    return int(size)


class ThrottledLog:
    """Log a repeated message at most once per ``interval`` seconds per key (first time at WARNING, then INFO)."""

    def __init__(self, logger: logging.Logger, interval: float = 60.0) -> None:
        self._logger = logger
        self._interval = interval
        self._last: dict[str, float] = {}

    def __call__(self, key: str, message: str) -> None:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            return
        self._logger.log(logging.WARNING if last is None else logging.INFO, message)
        self._last[key] = now


def get_buffer_cls(cfg: Mapping[str, Any]) -> type:
    """The class registered under ``cfg.type`` after importing ``cfg.import_names``."""
    if not isinstance(cfg, Mapping) or "type" not in cfg:
        raise ConfigError("replay buffer config: missing key 'type' (e.g. type='advanced'; known types: "
                          f"{', '.join(BUFFER_REGISTRY.query())})")
    import_module(cfg.get("import_names", None))
    return BUFFER_REGISTRY.get(cfg["type"], where="replay_buffer.type")


def create_buffer(cfg: Mapping[str, Any], *args: Any, **kwargs: Any) -> IBuffer:
    """Build the buffer ``cfg.type`` with ``cfg`` and the remaining constructor arguments."""
    return get_buffer_cls(cfg)(cfg, *args, **kwargs)
