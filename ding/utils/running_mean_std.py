"""Running mean and standard deviation of a stream of batches (PPO's value normalisation)."""
from __future__ import annotations

from typing import Any

import numpy as np


class RunningMeanStd:
    """Mean and variance of every value seen so far, merged batch by batch (Chan et al.'s parallel update).

    ``shape=()`` (the default) keeps scalar statistics over every value of a batch: ``mean`` and ``std`` are
    floats. A non-empty ``shape`` keeps per-feature statistics over the batch axis (``update`` takes
    ``(N, *shape)``) and ``mean`` / ``std`` are float32 torch tensors on ``device``, as in DI-engine.
    """

    def __init__(self, epsilon: float = 1e-4, shape: tuple = (), device: Any = None) -> None:
        self._epsilon, self._shape, self._device = float(epsilon), tuple(shape), device
        self.reset()

    def reset(self) -> None:
        if self._shape:
            self._mean: Any = np.zeros(self._shape, np.float64)
            self._var: Any = np.ones(self._shape, np.float64)
        else:
            self._mean, self._var = 0.0, 1.0
        self.count = self._epsilon  # a tiny prior count: the first batch sets the statistics almost alone

    def update(self, x: Any) -> None:
        x = np.asarray(x, dtype=np.float64)
        x = x.reshape(-1, *self._shape) if self._shape else x.reshape(-1)
        if x.shape[0] == 0:
            return
        b_mean, b_var, b_count = x.mean(0), x.var(0), float(x.shape[0])
        delta, total = b_mean - self._mean, self.count + b_count
        self._mean = self._mean + delta * b_count / total
        self._var = (self._var * self.count + b_var * b_count + delta ** 2 * self.count * b_count / total) / total
        self.count = total
        if not self._shape:
            self._mean, self._var = float(self._mean), float(self._var)

    def _out(self, value: Any) -> Any:
        if not self._shape:
            return float(value)
        import torch  # lazily: `import ding.utils` stays free of torch (fast CLI start)

        return torch.as_tensor(value, dtype=torch.float32, device=self._device)

    @property
    def mean(self) -> Any:
        return self._out(self._mean)

    @property
    def var(self) -> Any:
        return self._out(self._var)

    @property
    def std(self) -> Any:
        return self._out(np.sqrt(self._var + 1e-8))

    @staticmethod
    def new_shape(obs_shape: Any, act_shape: Any, rew_shape: Any) -> tuple[Any, Any, Any]:
        """DI-engine's hook for the statistics' shapes from the spaces': here the three shapes unchanged."""
        return obs_shape, act_shape, rew_shape

    def state_dict(self) -> dict[str, Any]:
        def plain(v: Any) -> Any:
            return v.tolist() if isinstance(v, np.ndarray) else v

        return {"mean": plain(self._mean), "var": plain(self._var), "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self._shape:
            self._mean = np.asarray(state["mean"], np.float64).reshape(self._shape)
            self._var = np.asarray(state["var"], np.float64).reshape(self._shape)
        else:
            self._mean, self._var = float(state["mean"]), float(state["var"])
        self.count = float(state["count"])
