"""MetricSerialEvaluator: evaluate a policy on a labelled dataset with an objective metric (no env)."""
from __future__ import annotations

import math
import numbers
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ding.config.ranges import at_least
from ding.utils import SERIAL_EVALUATOR_REGISTRY
from ding.utils.worker_logs import CONSOLE
from ding.worker.learner.checkpoint import CKPT_BEST_NAME

from .base_serial_evaluator import BaseSerialEvaluator


class IMetric(ABC):
    """An evaluation metric: per-batch ``eval``, ``reduce_mean`` over batches, and an order ``gt``."""

    @abstractmethod
    def eval(self, inputs: Any, label: Any) -> Any:
        """The metric of one batch: ``inputs`` is the policy's output, ``label`` the batch's labels."""

    @abstractmethod
    def reduce_mean(self, inputs: list[Any]) -> Any:
        """Combine the per-batch results into one."""

    @abstractmethod
    def gt(self, metric1: Any, metric2: Any) -> bool:
        """Whether ``metric1`` is at least as good as ``metric2`` (True when ``metric2`` is None)."""


@SERIAL_EVALUATOR_REGISTRY.register("metric")
class MetricSerialEvaluator(BaseSerialEvaluator):
    """Evaluate on ``env = (dataloader, metric)``: each batch is ``(inputs, label)``; the policy's eval forward maps
    inputs to outputs, ``metric.eval(outputs, label)`` scores them. ``eval`` returns ``(stop_flag, metric value)``."""

    config = dict(
        # Evaluate every N train iterations (and at the first should_eval call).
        eval_freq=50,
        # Metric value that ends training, compared with metric.gt (None or inf: never).
        stop_value=float("inf"),
    )
    config_ranges = {"eval_freq": at_least(1, integer=True)}

    def reset_env(self, _env: tuple[Iterable, IMetric] | None = None) -> None:
        if _env is None:
            return
        if not (isinstance(_env, (tuple, list)) and len(_env) == 2 and isinstance(_env[1], IMetric)):
            raise TypeError(f"MetricSerialEvaluator: env must be a (dataloader, IMetric instance) pair, got {_env!r}")
        self._env = tuple(_env)

    def _initial_best(self) -> Any:
        return None

    def _close_env(self) -> None:
        loader: Any = self._env[0] if self._env is not None else None
        if callable(getattr(loader, "close", None)):
            loader.close()

    def eval(
            self,
            save_ckpt_fn: Callable[[str], Any] | None = None,
            train_iter: int = -1,
            envstep: int = -1,
    ) -> tuple[bool, Any]:
        self._check_ready("eval")
        dataloader, metric = self._env
        self._policy.reset()
        results = []
        t0 = time.perf_counter()
        for batch in dataloader:
            inputs, label = batch
            results.append(metric.eval(self._policy.forward(inputs), label))
        if not results:
            raise ValueError("MetricSerialEvaluator.eval: the dataloader yielded no batch")
        value = metric.reduce_mean(results)
        duration = time.perf_counter() - t0
        if metric.gt(value, self._best_return):
            if save_ckpt_fn is not None:
                save_ckpt_fn(CKPT_BEST_NAME)
            self._best_return = value
        stop_value = self._cfg.stop_value
        never = stop_value is None or (isinstance(stop_value, float) and math.isinf(stop_value))
        stop_flag = (not never) and bool(metric.gt(value, stop_value))
        head = f"[eval] iter {train_iter:,} | " if train_iter >= 0 else "[eval] "
        self._logger.info(f"{head}metric {value} (best {self._best_return}) | {len(results)} batches in "
                          f"{duration:.2f}s" + (" | reached stop value" if stop_flag else ""), extra=CONSOLE)
        if self._tb_logger is not None:
            items = value.items() if isinstance(value, Mapping) else [("metric", value)]
            for k, v in items:
                if isinstance(v, numbers.Real):
                    if train_iter >= 0:
                        self._tb_logger.add_scalar(f"{self._instance_name}_iter/{k}", float(v), train_iter)
                    if envstep >= 0:
                        self._tb_logger.add_scalar(f"{self._instance_name}_step/{k}", float(v), envstep)
        return stop_flag, value
