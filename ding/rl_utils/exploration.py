"""Exploration schedules: epsilon as a function of collected env steps."""
from __future__ import annotations

import math
from typing import Any

from ding.utils import ConfigError

EPSILON_SCHEDULE_TYPES = ("exp", "linear")


class EpsilonSchedule:
    """``eps(envstep)`` decaying from ``start`` towards ``end``.

    ``'exp'``: ``end + (start - end) * exp(-envstep / decay)``. ``'linear'``: straight line from ``start`` at step 0
    to ``end`` at step ``decay``, then constant ``end``. The schedule is a pure function of the env step, so restoring
    the collector's env step on resume restores epsilon too.
    """

    def __init__(self, start: float, end: float, decay: int | float, type_: str = "exp") -> None:
        if type_ not in EPSILON_SCHEDULE_TYPES:
            raise ConfigError(f"epsilon schedule: unknown type {type_!r}; use one of {EPSILON_SCHEDULE_TYPES} "
                             "(config key policy.other.eps.type)")
        for name, value in (("start", start), ("end", end)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"epsilon schedule: {name}={value!r} is not a probability in [0, 1] "
                                 f"(config key policy.other.eps.{name})")
        if not decay > 0:
            raise ConfigError(f"epsilon schedule: decay={decay!r} must be > 0 env steps "
                             "(config key policy.other.eps.decay)")
        self.start = float(start)
        self.end = float(end)
        self.decay = decay
        self.type = type_

    def __call__(self, envstep: int) -> float:
        if self.type == "exp":
            return self.end + (self.start - self.end) * math.exp(-envstep / self.decay)
        if envstep >= self.decay:
            return self.end  # exactly ``end`` once decayed (``start + (end - start) * 1`` can round off it)
        frac = max(envstep, 0) / self.decay
        return self.start + (self.end - self.start) * frac

    def __repr__(self) -> str:
        return f"EpsilonSchedule(start={self.start}, end={self.end}, decay={self.decay}, type_={self.type!r})"


def get_epsilon_greedy_fn(start: float, end: float, decay: int | float, type_: str = "exp") -> EpsilonSchedule:
    """Return the callable ``eps(envstep)`` (DI-engine's name and argument order)."""
    return EpsilonSchedule(start, end, decay, type_)


def create_noise_generator(noise_type: str, noise_kwargs: dict) -> Any:
    """An action-noise generator, ``noise(shape, device) -> tensor``: 'gauss' (``mu``, ``sigma``) or 'ou'
    (Ornstein-Uhlenbeck: ``mu``, ``sigma``, ``theta``, ``dt``, ``x0``) -- the ones ``ActionNoiseWrapper`` uses."""
    from ding.model.wrapper.model_wrappers import NOISE_TYPES

    if noise_type not in NOISE_TYPES:
        raise KeyError(f"create_noise_generator: unknown noise type {noise_type!r}; use one of {sorted(NOISE_TYPES)}")
    return NOISE_TYPES[noise_type](**noise_kwargs)
