"""BaseParallelCollector: the part of a collector process that steps envs and writes data, one task at a time."""
from __future__ import annotations

import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from easydict import EasyDict

from ding.parallel.protocol import CollectorFinishInfo, CollectResult, CollectTask, EvalResult, EvalTask
from ding.utils import PARALLEL_COLLECTOR_REGISTRY, config_of, import_module


class BaseParallelCollector(ABC):
    """Runs the collector tasks its comm collector hands over, through that comm collector's ``send_stepdata``,
    ``send_samples`` (default: one ``send_stepdata`` per sample) and ``get_policy_update_info``."""

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any, exp_name: str = "default_experiment", instance_name: str = "collector", *,
                 send_stepdata: Callable[..., Any], get_policy_update_info: Callable[[str], dict | None],
                 send_samples: Callable[..., list[str]] | None = None) -> None:
        self._cfg = cfg
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._logger = logging.getLogger(f"ding.parallel_collector.{instance_name}")
        self._policy_iter = -1
        self.send_stepdata = send_stepdata
        self.send_samples = send_samples or functools.partial(samples_one_by_one, send_stepdata)
        self.get_policy_update_info = get_policy_update_info

    def info(self, s: str) -> None:
        self._logger.info(f"[{self._instance_name}] {s}")

    def error(self, s: str) -> None:
        self._logger.error(f"[{self._instance_name}] {s}")

    def debug(self, s: str) -> None:
        self._logger.debug(f"[{self._instance_name}] {s}")

    @property
    def policy_iter(self) -> int:
        """Train iteration of the policy in use (-1: none loaded yet)."""
        return self._policy_iter

    @abstractmethod
    def start(self) -> None:
        """Build envs and the policy."""

    @abstractmethod
    def run_task(self, task: CollectTask | EvalTask) -> CollectResult | EvalResult:
        """Run one collect or evaluation task; its answer."""

    @abstractmethod
    def get_finish_info(self) -> CollectorFinishInfo:
        """Totals of everything this collector did."""

    @abstractmethod
    def close(self) -> None:
        """Close envs and loggers (idempotent)."""


def get_parallel_collector_cls(cfg: Mapping) -> type:
    import_module(cfg.get("import_names"))  # (this package's own collectors registered when it was imported)
    return PARALLEL_COLLECTOR_REGISTRY.get(cfg.get("type", "zergling"), where="policy.collect.collector.type")


def create_parallel_collector(cfg: Any, **kwargs: Any) -> BaseParallelCollector:
    """The parallel collector ``cfg.policy.collect.collector.type`` names (default 'zergling') for the main config."""
    return get_parallel_collector_cls(cfg.policy.collect.collector)(cfg, **kwargs)


def samples_one_by_one(send_stepdata: Callable[..., Any], file_id: str, samples: list,
                       compress: bool = True) -> list[str]:
    """Store a task's samples through ``send_stepdata``, one data file ``<file_id>.<i>`` each; their data ids."""
    ids = [f"{file_id}.{i}" for i in range(len(samples))]
    for data_id, sample in zip(ids, samples):
        send_stepdata(data_id, sample, compress)
    return ids
