"""BaseCommLearner: a learner process's link to the coordinator (tasks in, data and policies through files)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.utils import COMM_LEARNER_REGISTRY, config_of, import_module


class BaseCommLearner(ABC):
    """Receives the coordinator's learner tasks; the :class:`BaseLearner` it builds takes its data from
    :meth:`get_data` and reports through the hooks in :attr:`hooks4call`."""

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg

    @abstractmethod
    def send_policy(self, state_dict: dict) -> None:
        """Publish the learner's current policy for the collectors."""

    @abstractmethod
    def get_data(self, batch_size: int) -> list | None:
        """One batch of training samples (None: no more data, the learner stops)."""

    @abstractmethod
    def send_learn_info(self, learn_info: dict) -> None:
        """Report one iteration's learn info (step, priorities) to the coordinator."""

    def start(self) -> None:
        """Start serving the coordinator."""

    def close(self) -> None:
        """Stop serving (idempotent)."""

    @property
    @abstractmethod
    def hooks4call(self) -> list:
        """Learner hooks the comm learner registers on the learner it builds."""


def create_comm_learner(cfg: Mapping, **kwargs: Any) -> BaseCommLearner:
    """The comm learner ``cfg.type`` names (default 'flask_fs'), after importing ``cfg.import_names``."""
    import_module(cfg.get("import_names"))
    return COMM_LEARNER_REGISTRY.get(cfg.get("type", "flask_fs"), where="comm_learner.type")(cfg, **kwargs)
