"""Running mean and standard deviation of a stream of batches (PPO's value normalisation)."""
from __future__ import annotations

from typing import Any

import numpy as np


class RunningMeanStd:
    """Mean and variance of every value seen so far, merged batch by batch (Chan et al.'s parallel update)."""

    def __init__(self, epsilon: float = 1e-4, shape: tuple = (), device: Any = None) -> None:
        # DI-engine's signature; only scalar statistics are kept (``shape=()``), on the CPU as floats
        if tuple(shape) != ():
            raise ValueError(f"RunningMeanStd: only scalar statistics (shape=()) are supported, got shape={shape}")
        self._epsilon = float(epsilon)
        self.mean = 0.0
        self.var = 1.0
        self.count = float(epsilon)  # a tiny prior count: the first batch sets the statistics almost alone

    def update(self, x: Any) -> None:
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.size == 0:
            return
        b_mean, b_var, b_count = float(x.mean()), float(x.var()), float(x.size)
        delta, total = b_mean - self.mean, self.count + b_count
        self.mean += delta * b_count / total
        self.var = (self.var * self.count + b_var * b_count + delta ** 2 * self.count * b_count / total) / total
        self.count = total

    @property
    def std(self) -> float:
        return float(np.sqrt(self.var + 1e-8))

    def reset(self) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, self._epsilon

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])
