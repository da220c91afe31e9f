"""BaseCommCollector: a collector process's link to the coordinator."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.parallel.roles.collector.base_parallel import samples_one_by_one
from ding.utils import COMM_COLLECTOR_REGISTRY, config_of, import_module


class BaseCommCollector(ABC):
    """Receives the coordinator's collector tasks and hands the parallel collector it builds the functions it talks
    through: ``send_stepdata``, ``send_samples`` and ``get_policy_update_info``."""

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg

    @abstractmethod
    def get_policy_update_info(self, path: str) -> dict | None:
        """The policy published at ``path`` (None: nothing published yet)."""

    @abstractmethod
    def send_stepdata(self, data_id: str, stepdata: Any, compress: bool = True) -> Any:
        """Store one sample where the learner can read it."""

    def send_samples(self, file_id: str, samples: list, compress: bool = True) -> list[str]:
        """Store a task's samples; their data ids in order (by default one data file ``<file_id>.<i>`` each)."""
        return samples_one_by_one(self.send_stepdata, file_id, samples, compress)

    def start(self) -> None:
        """Start serving the coordinator."""

    def close(self) -> None:
        """Stop serving (idempotent)."""


def create_comm_collector(cfg: Mapping, **kwargs: Any) -> BaseCommCollector:
    """The comm collector ``cfg.type`` names (e.g. 'flask_fs'), after importing ``cfg.import_names``."""
    import_module(cfg.get("import_names"))  # (this package's own collectors registered when it was imported)
    return COMM_COLLECTOR_REGISTRY.get(cfg.get("type", "flask_fs"), where="comm_collector.type")(cfg, **kwargs)
