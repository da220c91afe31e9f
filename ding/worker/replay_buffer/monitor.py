"""Throughput control and monitoring for the prioritized buffer. Nothing here runs in a background thread: the
buffer calls in on ``push``/``sample`` and the checks cost a clock read and a few integer operations."""
from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

Clock = Callable[[], float]


class ThruputController:
    """Keeps the ratio "items pushed / items sampled" over the last ``window_seconds`` within limits.

    Above ``push_sample_rate_limit.max`` pushes are rejected (the collector outruns the learner); below ``min``
    sampling is refused (the learner would reuse data too much). Counts are kept in one-second buckets. A ratio with
    nothing sampled in the window counts as unbounded (pushes are never rejected before the learner starts).
    """

    def __init__(self, cfg: Mapping[str, Any], clock: Clock = time.monotonic) -> None:
        self.max_rate = float(cfg["push_sample_rate_limit"]["max"])
        self.min_rate = float(cfg["push_sample_rate_limit"]["min"])
        self.window_seconds = float(cfg["window_seconds"])
        self.sample_min_limit_ratio = float(cfg["sample_min_limit_ratio"])
        self.active = self.max_rate < math.inf or self.min_rate > 0
        self._clock = clock
        self._buckets: deque[list] = deque()  # [second, pushed, sampled]
        self._pushed = 0
        self._sampled = 0

    def _prune(self, now: float) -> None:
        horizon = math.floor(now - self.window_seconds)
        while self._buckets and self._buckets[0][0] <= horizon:
            _, pushed, sampled = self._buckets.popleft()
            self._pushed -= pushed
            self._sampled -= sampled

    def record(self, pushed: int = 0, sampled: int = 0) -> None:
        if not self.active:
            return
        now = self._clock()
        self._prune(now)
        second = math.floor(now)
        if not self._buckets or self._buckets[-1][0] != second:
            self._buckets.append([second, 0, 0])
        self._buckets[-1][1] += pushed
        self._buckets[-1][2] += sampled
        self._pushed += pushed
        self._sampled += sampled

    def rate(self) -> float:
        """Pushed / sampled items in the window (inf if nothing was sampled)."""
        self._prune(self._clock())
        return self._pushed / self._sampled if self._sampled else math.inf

    def push_blocked(self) -> str | None:
        if self.max_rate == math.inf:
            return None
        rate = self.rate()
        if self._sampled and rate > self.max_rate:
            return (f"push/sample rate {rate:.2f} over the last {self.window_seconds:g}s is above "
                    f"push_sample_rate_limit.max={self.max_rate:g}; the pushed data is dropped")
        return None

    def sample_blocked(self) -> str | None:
        if self.min_rate <= 0:
            return None
        rate = self.rate()
        if rate < self.min_rate:
            return (f"push/sample rate {rate:.2f} over the last {self.window_seconds:g}s is below "
                    f"push_sample_rate_limit.min={self.min_rate:g}; sample() returns None until more data is pushed")
        return None


class SampledDataMonitor:
    """Averages of the sampled items' use count, priority and staleness over the last ``average_range`` sample
    calls, written every ``print_freq`` calls to TensorBoard (``<instance>_iter/<name>``) and the text log."""

    def __init__(self, cfg: Mapping[str, Any], instance_name: str, tb_logger: Any, logger: logging.Logger) -> None:
        self.average_range = max(1, int(cfg["average_range"]))
        self.print_freq = max(1, int(cfg["print_freq"]))
        self._recent: deque[dict[str, float]] = deque(maxlen=self.average_range)
        self._prefix = f"{instance_name}_iter/"
        self._tb_logger = tb_logger
        self._logger = logger

    def wants(self, call_number: int) -> bool:
        """Whether call ``call_number`` (1-based) falls in the averaging window before a report."""
        return (self.print_freq - call_number % self.print_freq) % self.print_freq < self.average_range

    def observe(self, call_number: int, cur_learner_iter: int, use: np.ndarray, priority: np.ndarray,
                staleness: np.ndarray, weight: np.ndarray, beta: float) -> None:
        self._recent.append({
            "use_avg": float(use.mean()), "use_max": float(use.max()),
            "priority_avg": float(priority.mean()), "priority_max": float(priority.max()),
            "priority_min": float(priority.min()),
            "staleness_avg": float(staleness.mean()), "staleness_max": float(staleness.max()),
            "IS_avg": float(weight.mean()), "beta": float(beta),
        })
        if call_number % self.print_freq:
            return
        averages = {k: float(np.mean([r[k] for r in self._recent])) for k in self._recent[0]}
        if self._tb_logger is not None:
            for key, value in averages.items():
                self._tb_logger.add_scalar(self._prefix + key, value, cur_learner_iter)
        self._logger.info("sampled data (last %d calls) | %s", len(self._recent),
                          " | ".join(f"{k} {v:.4g}" for k, v in averages.items()))


class PeriodicThruputMonitor:
    """Every ``seconds``, writes pushed / sampled / removed items per second and the stored count to TensorBoard
    (``<instance>_sec/<name>``, step = whole seconds since construction) and the text log."""

    def __init__(self, cfg: Mapping[str, Any], instance_name: str, tb_logger: Any, logger: logging.Logger,
                 clock: Clock = time.monotonic) -> None:
        self.seconds = float(cfg["seconds"])
        self._prefix = f"{instance_name}_sec/"
        self._tb_logger = tb_logger
        self._logger = logger
        self._clock = clock
        self._start = self._last = clock()
        self._counts = {"pushed": 0, "sampled": 0, "removed": 0, "rejected_push": 0, "refused_sample": 0}

    def add(self, key: str, n: int) -> None:
        self._counts[key] += n

    def tick(self, valid_count: int) -> None:
        now = self._clock()
        elapsed = now - self._last
        if elapsed < self.seconds:
            return
        rates = {f"{k}_per_sec": v / elapsed for k, v in self._counts.items()}
        rates["valid_count"] = float(valid_count)
        if self._tb_logger is not None:
            step = int(now - self._start)
            for key, value in rates.items():
                self._tb_logger.add_scalar(self._prefix + key, value, step)
        self._logger.info("throughput | %s", " | ".join(f"{k} {v:.1f}" for k, v in rates.items()))
        self._counts = dict.fromkeys(self._counts, 0)
        self._last = now
