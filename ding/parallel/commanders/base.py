"""Parallel commanders: decide which task each learner and collector gets next (the coordinator sends them)."""
from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.config.ranges import between
from ding.parallel.protocol import (
    CollectResult,
    CollectTask,
    CommanderStatus,
    EvalRecord,
    EvalResult,
    EvalTask,
    LearnerClosed,
    LearnerSlot,
    LearnerStarted,
    LearnInfo,
)
from ding.utils import COMMANDER_REGISTRY, config_of, import_module


class LimitedSpaceContainer:
    """A counter of task slots: ``acquire_space()`` takes one if any is free (DI-engine's name and behaviour)."""

    def __init__(self, min_val: int = 0, max_val: float = float("inf")) -> None:
        self.min_val = min_val
        self.max_val = max_val
        self.cur = min_val
        self._lock = threading.Lock()

    def acquire_space(self) -> bool:
        with self._lock:
            if self.cur < self.max_val:
                self.cur += 1
                return True
            return False

    def release_space(self) -> None:
        with self._lock:
            self.cur = max(self.min_val, self.cur - 1)

    def increase_space(self) -> None:
        with self._lock:
            self.max_val += 1

    def decrease_space(self) -> None:
        with self._lock:
            self.max_val -= 1


class BaseCommander(ABC):
    """The interface the coordinator drives, with already checked records; ``cfg`` is the compiled main config."""

    config: dict = dict(
        collector_task_space=None,  # collector tasks running at once; None: one per connected collector
        learner_task_space=1,  # accepted for DI-engine configs; must be 1 (a learner group is one task too)
        eval_interval=60.0,  # seconds: evaluate at least this often (policy.eval.evaluator.eval_freq also triggers)
    )
    config_ranges = {  # checked when the config compiles; a subclass's own are merged with these
        "learner_task_space": between(1, 1, integer=True, hint="accepted for DI-engine configs: one learner task "
                                                               "runs at a time; several learners are one group"),
    }

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg
        self.eval_history: list[EvalRecord] = []
        self.max_env_step: float = math.inf  # limits that end the run (the coordinator sets them)
        self.max_train_iter: float = math.inf

    @abstractmethod
    def get_collector_task(self, collector: str = "") -> CollectTask | EvalTask | None:
        """The next task for ``collector`` (None: nothing to do right now)."""

    @abstractmethod
    def get_learner_task(self) -> LearnerSlot | None:
        """The next learner's task (None: every learner slot is taken)."""

    @abstractmethod
    def finish_collector_task(self, task_id: str, finished_task: CollectResult | EvalResult) -> bool:
        """Record a finished collector task; True when the run reached its goal."""

    @abstractmethod
    def finish_learner_task(self, task_id: str, finished_task: LearnerClosed) -> str:
        """Record a finished learner task; returns its buffer id."""

    @abstractmethod
    def notify_fail_collector_task(self, task: CollectTask | EvalTask) -> None:
        """A collector task failed or its collector was lost: free its slot (the work is handed out again)."""

    @abstractmethod
    def notify_fail_learner_task(self, task: LearnerSlot) -> None:
        """A learner task failed or its learner was lost."""

    @abstractmethod
    def update_learner_info(self, task_id: str, info: LearnInfo) -> None:
        """The learner reported progress (train iterations, published policy)."""

    def learner_started(self, task_id: str, info: LearnerStarted) -> None:
        self.update_learner_info(task_id, LearnInfo(learner_step=info.learner_step, policy_iter=info.policy_iter))

    def get_policy_id(self) -> str:
        """The file under ``path_policy`` the learner publishes its policy to."""
        return "policy"

    def set_path_policy(self, path_policy: str) -> None:
        """The run's shared policy directory, told before anything starts (a league keeps its snapshots there)."""

    @abstractmethod
    def learner_may_train(self, buffer_count: int) -> bool:
        """Whether the learner may get one more batch now."""

    def batch_served(self) -> None:
        """A batch went to the learner."""

    @abstractmethod
    def status(self) -> CommanderStatus:
        """Progress counters."""

    @property
    @abstractmethod
    def end_reason(self) -> str | None:
        """Why the run should end (None: it goes on)."""

    @property
    def reached_stop_value(self) -> bool:
        """True once an evaluation reached the stop value (nothing to resume)."""
        return False

    @abstractmethod
    def request_end(self, reason: str) -> None:
        """End the run for ``reason`` (the first reason given wins)."""

    def increase_collector_task_space(self) -> None:
        """A collector joined."""

    def decrease_collector_task_space(self) -> None:
        """A collector left."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        pass


def get_parallel_commander_cls(cfg: Mapping) -> type:
    """The commander class ``cfg.type`` names (default 'solo'), after importing ``cfg.import_names``."""
    import_module(cfg.get("import_names"))
    return COMMANDER_REGISTRY.get(cfg.get("type", "solo"), where="policy.other.commander.type")


def create_parallel_commander(cfg: Any) -> BaseCommander:
    """The commander ``cfg.policy.other.commander`` names, built from the compiled main config."""
    return get_parallel_commander_cls(cfg.policy.other.commander)(cfg)
