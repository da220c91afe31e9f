"""DI-engine's ``Scheduler``: change a training parameter (e.g. an entropy weight) when a metric stops improving.

Each :meth:`Scheduler.step` reads the metric; once it has not beaten the best-so-far by ``threshold`` for more than
``patience`` steps in a row, the parameter moves by ``factor`` in ``schedule_mode`` ('reduce' subtracts, 'add' adds,
'multi' multiplies, 'div' divides), clipped to ``change_range``; then ``cooldown`` steps ignore stagnation.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

from .errors import ConfigError


class SchedulerConfigError(ConfigError, AssertionError):
    """A bad scheduler config. Also an ``AssertionError``: DI-engine asserts these checks, and its users' code and
    tests catch that."""


def _reduce(x: float, f: float, lo: float, hi: float) -> float:
    return max(x - f, lo)


def _add(x: float, f: float, lo: float, hi: float) -> float:
    return min(x + f, hi)


def _multi(x: float, f: float, lo: float, hi: float) -> float:
    return min(x * f, hi) if f >= 1 else max(x * f, lo)


def _div(x: float, f: float, lo: float, hi: float) -> float:
    return max(x / f, lo) if f >= 1 else min(x / f, hi)


SCHEDULE_MODES: dict[str, Callable[[float, float, float, float], float]] = {
    "reduce": _reduce, "add": _add, "multi": _multi, "div": _div,
}


class Scheduler:
    """Plateau schedule of one parameter (DI-engine's ``ding.utils.Scheduler``)."""

    config: ClassVar[dict[str, Any]] = dict(
        schedule_flag=False,  # whether the caller uses the scheduler at all (read by the caller)
        schedule_mode="reduce",  # 'reduce' | 'add' | 'multi' | 'div'
        factor=0.05,  # step of the change (> 0)
        change_range=[-1, 1],  # [lowest, highest] value the parameter may reach
        threshold=1e-4,  # a metric must beat the last one by more than this to count as better
        optimize_mode="min",  # 'min': lower metric is better; 'max': higher is better
        patience=10,  # steps without improvement tolerated before a change
        cooldown=0,  # steps after a change during which stagnation is ignored
    )

    def __init__(self, merged_scheduler_config: Mapping[str, Any]) -> None:
        cfg = {**self.config, **dict(merged_scheduler_config)}
        if cfg["schedule_mode"] not in SCHEDULE_MODES:
            raise SchedulerConfigError(f"scheduler.schedule_mode: {cfg['schedule_mode']!r} is not one of "
                                       f"{list(SCHEDULE_MODES)}")
        if isinstance(cfg["factor"], bool) or not isinstance(cfg["factor"], (int, float)) or cfg["factor"] <= 0:
            raise SchedulerConfigError(f"scheduler.factor: expected a float/int number greater than 0, "
                                       f"got {cfg['factor']!r}")
        rng = cfg["change_range"]
        if (not isinstance(rng, (list, tuple)) or len(rng) != 2
                or not all(isinstance(v, (int, float)) for v in rng) or not rng[0] < rng[1]):
            raise SchedulerConfigError(f"scheduler.change_range: expected a list of two float/int numbers, the first "
                                       f"smaller than the second, got {rng!r}")
        if not isinstance(cfg["threshold"], (int, float)):
            raise SchedulerConfigError(f"scheduler.threshold: expected a number, got {cfg['threshold']!r}")
        if cfg["optimize_mode"] not in ("min", "max"):
            raise SchedulerConfigError(f"scheduler.optimize_mode: {cfg['optimize_mode']!r} is not 'min' or 'max'")
        for key in ("patience", "cooldown"):
            if isinstance(cfg[key], bool) or not isinstance(cfg[key], int) or cfg[key] < 0:
                raise SchedulerConfigError(f"scheduler.{key}: expected an integer greater than or equal to 0, "
                                       f"got {cfg[key]!r}")
        self.schedule_mode: str = cfg["schedule_mode"]
        self.factor = float(cfg["factor"])
        self.change_range = list(rng)
        self.threshold = float(cfg["threshold"])
        self.optimize_mode: str = cfg["optimize_mode"]
        self.patience: int = cfg["patience"]
        self.cooldown: int = cfg["cooldown"]
        self.cooldown_counter = self.cooldown
        self.last_metrics: float | None = None
        self.bad_epochs_num = 0

    def step(self, metrics: float, param: float) -> float:
        """Record one metric value; return the parameter, changed if the metric has stagnated too long."""
        if not isinstance(metrics, float):
            raise TypeError(f"Scheduler.step: metrics must be a float, got {type(metrics).__name__}")
        self.bad_epochs_num = 0 if self.is_better(metrics) else self.bad_epochs_num + 1
        self.last_metrics = metrics
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.bad_epochs_num = 0
        if self.bad_epochs_num > self.patience:
            param = self.update_param(param)
            self.cooldown_counter = self.cooldown
            self.bad_epochs_num = 0
        return param

    def update_param(self, param: float) -> float:
        """The parameter after one change in ``schedule_mode``, clipped to ``change_range``."""
        lo, hi = self.change_range
        return SCHEDULE_MODES[self.schedule_mode](param, self.factor, lo, hi)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, cur: float) -> bool:
        """Whether ``cur`` beats the last metric by more than ``threshold`` (the first value always does)."""
        if self.last_metrics is None:
            return True
        if self.optimize_mode == "min":
            return cur < self.last_metrics - self.threshold
        return cur > self.last_metrics + self.threshold
