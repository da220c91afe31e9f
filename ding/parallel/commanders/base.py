"""Parallel commanders: decide which task each learner and collector gets next (the coordinator sends them)."""
from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Callable

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
    """The interface the :class:`~ding.parallel.coordinator.Coordinator` drives. ``cfg`` is the compiled main config.
    Tasks and answers are the typed records of :mod:`ding.parallel.protocol`, already checked."""

    config: dict = dict(
        collector_task_space=None,  # collector tasks running at once; None: one per connected collector
        learner_task_space=1,  # accepted for DI-engine configs; must be 1 (one learner task: a group is one too)
        eval_interval=60.0,  # seconds: evaluate at least this often (policy.eval.evaluator.eval_freq also triggers)
    )
    # checked when the config compiles (ding/config/ranges.py); a subclass's own are merged with these
    config_ranges = {
        "learner_task_space": between(1, 1, integer=True, hint="accepted for DI-engine configs: one learner task "
                                                               "runs at a time; several learners are one group"),
    }

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg
        self.eval_history: list[EvalRecord] = []  # one record per finished evaluation
        self.max_env_step: float = math.inf  # limits that end the run (the Coordinator sets them from its own)
        self.max_train_iter: float = math.inf
        # set by the Coordinator for commanders that split an evaluation over collectors (see eval_shards.py): copy
        # the live policy file to a snapshot id (None: none could be taken), and drop a snapshot once its evaluation
        # ended (True: keep it first as the best evaluated policy)
        self.snapshot_policy: Callable[[str], str | None] | None = None
        self.drop_snapshot: Callable[[str, bool], None] | None = None

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
        """A learner answered its start task."""
        self.update_learner_info(task_id, LearnInfo(learner_step=info.learner_step, policy_iter=info.policy_iter))

    def get_policy_id(self) -> str:
        """File name (under ``path_policy``) the learner publishes its policy to."""
        return "policy"

    def set_path_policy(self, path_policy: str) -> None:
        """The run's shared policy directory (the coordinator tells it before anything starts); a commander that
        publishes files beside the learner's policy (the league's snapshots) keeps them there."""

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
        """True once an evaluation reached the stop value: the run is finished (nothing to resume)."""
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
    import_module(cfg.get("import_names"))
    return COMMANDER_REGISTRY.get(cfg.get("type", "solo"), where="policy.other.commander.type")


def create_parallel_commander(cfg: Any) -> BaseCommander:
    """The commander ``cfg.policy.other.commander.type`` names (default 'solo'), built from the compiled main config."""
    commander_cfg = cfg.policy.other.commander
    import_module(commander_cfg.get("import_names"))
    if commander_cfg.get("type", "solo") not in COMMANDER_REGISTRY:
        import importlib

        importlib.import_module("ding.parallel.commanders.solo")
    return get_parallel_commander_cls(commander_cfg)(cfg)
