"""The calls a commander gets from the coordinator, in the order and on the threads docs/parallel.md ("Writing a
commander") states: a commander that records every call, driven by a real Coordinator against the in-process fake
slaves of test_coordinator.py (real loopback HTTP, no role processes)."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from ding.parallel.commanders import SoloCommander
from ding.parallel.protocol import CollectTask, EvalTask, LearnerSlot
from ding.utils import COMMANDER_REGISTRY
from ding.worker import Coordinator
from tests.worker.test_coordinator import TOKEN, FakeCollector, FakeLearner, _cfg, _run

pytestmark = pytest.mark.timeout(120)
COLLECTOR_CALLS = {"increase_collector_task_space", "get_collector_task", "finish_collector_task",
                   "notify_fail_collector_task", "decrease_collector_task_space"}


@COMMANDER_REGISTRY.register("recording_for_tests")
class RecordingCommander(SoloCommander):
    """The solo commander, noting every call of the interface: (method, thread name, detail)."""

    def __init__(self, cfg: Any) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self._calls_lock = threading.Lock()
        super().__init__(cfg)

    def _note(self, name: str, detail: Any = None) -> None:
        with self._calls_lock:
            self.calls.append((name, threading.current_thread().name, detail))

    def set_path_policy(self, path_policy):
        self._note("set_path_policy")
        super().set_path_policy(path_policy)

    def get_learner_task(self):
        slot = super().get_learner_task()
        self._note("get_learner_task", slot)
        return slot

    def learner_started(self, task_id, info):
        self._note("learner_started", task_id)  # (noted first: the first policy exists only once super() ran)
        super().learner_started(task_id, info)

    def notify_fail_learner_task(self, task):
        self._note("notify_fail_learner_task", task.task_id)
        super().notify_fail_learner_task(task)

    def learner_may_train(self, buffer_count):
        allowed = super().learner_may_train(buffer_count)
        self._note("learner_may_train", allowed)
        return allowed

    def batch_served(self):
        self._note("batch_served")
        super().batch_served()

    def update_learner_info(self, task_id, info):
        self._note("update_learner_info", task_id)
        super().update_learner_info(task_id, info)

    def finish_learner_task(self, task_id, finished_task):
        self._note("finish_learner_task", task_id)
        return super().finish_learner_task(task_id, finished_task)

    def increase_collector_task_space(self):
        self._note("increase_collector_task_space")
        super().increase_collector_task_space()

    def decrease_collector_task_space(self):
        self._note("decrease_collector_task_space")
        super().decrease_collector_task_space()

    def get_collector_task(self, collector=""):
        task = super().get_collector_task(collector)
        self._note("get_collector_task", (collector, task))
        return task

    def finish_collector_task(self, task_id, finished_task):
        self._note("finish_collector_task", task_id)
        return super().finish_collector_task(task_id, finished_task)

    def notify_fail_collector_task(self, task):
        self._note("notify_fail_collector_task", task.task_id)
        super().notify_fail_collector_task(task)

    def request_end(self, reason):
        self._note("request_end", reason)
        super().request_end(reason)


class FlakyCollector(FakeCollector):
    """Fails its first collect task (the coordinator gets a task/fail), then answers like FakeCollector."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed_task: str | None = None

    def data(self, p):
        if self.failed_task is None and not p["eval_flag"]:
            self.failed_task = p["task_id"]
            raise RuntimeError("a scripted failure of the first collect task")
        return super().data(p)


def _recorded_run(in_tmp_dir):
    cfg = _cfg(exp="calls")
    cfg.main.policy.other.commander.type = "recording_for_tests"  # (the solo commander's keys: its config is solo's)
    coordinator = Coordinator(cfg, token=TOKEN)
    commander = coordinator.commander
    assert isinstance(commander, RecordingCommander)
    collectors = [FlakyCollector(f"collector{i}", [10.0] * 6 + [200.0] * 30) for i in range(2)]
    _run(coordinator, [FakeLearner(), *collectors])
    assert "stop value" in coordinator.end_reason and coordinator.fatal_error is None
    return coordinator, commander, collectors


def test_the_coordinator_calls_a_commander_in_the_documented_order_and_threads(in_tmp_dir):
    coordinator, commander, collectors = _recorded_run(in_tmp_dir)
    calls = list(commander.calls)
    names = [c[0] for c in calls]
    assert names[0] == "set_path_policy"  # before anything else (the constructor aside)

    # the learner: its slot, its start, then batches; its close is the last call of its thread
    learner = [c for c in calls if c[1] == "ding-coord-learner0"]
    slot = next(c[2] for c in learner if c[0] == "get_learner_task" and c[2] is not None)
    assert isinstance(slot, LearnerSlot)
    started = names.index("learner_started")
    assert calls[started][2] == slot.task_id
    assert "learner_may_train" not in [c[0] for c in learner[:learner.index(calls[started])]]
    assert [c[0] for c in learner if c[0] == "finish_learner_task"] == ["finish_learner_task"]
    assert learner[-1][0] == "finish_learner_task" and learner[-2][0] == "update_learner_info"
    # batch_served only right after learner_may_train said yes, in the thread that samples the batch
    served = [i for i, c in enumerate(learner) if c[0] == "batch_served"]
    assert served and all(learner[i - 1][0] == "learner_may_train" and learner[i - 1][2] is True for i in served)
    # no collector starts before the first policy (the learner's start)
    assert started < names.index("increase_collector_task_space")

    # the collectors: only their own threads make collector calls; each one has one task at a time
    handed: dict[str, str] = {}  # task id -> collector thread
    outcomes: dict[str, list[str]] = {}  # task id -> the outcome calls it got
    threads = {c[1] for c in calls if c[0] in COLLECTOR_CALLS}  # (a fast run may end before one collector starts)
    assert threads and threads <= {"ding-coord-collector0", "ding-coord-collector1"}
    for thread in sorted(threads):
        name = thread[len("ding-coord-"):]
        # (the thread that finished the task that ended the run also calls request_end: any thread may)
        assert {c[0] for c in calls if c[1] == thread} <= COLLECTOR_CALLS | {"request_end"}
        own = [c for c in calls if c[1] == thread and c[0] in COLLECTOR_CALLS]
        assert own[0][0] == "increase_collector_task_space" and own[-1][0] == "decrease_collector_task_space"
        open_task = None
        for call, _, detail in own[1:-1]:
            if call == "get_collector_task":
                assert open_task is None, f"{name} asked for a task while {open_task} was running"
                asked_for, task = detail
                assert asked_for == name
                if task is not None:
                    assert isinstance(task, (CollectTask, EvalTask))
                    open_task = task.task_id
                    handed[open_task] = thread
            else:
                assert call in ("finish_collector_task", "notify_fail_collector_task") and detail == open_task
                outcomes.setdefault(detail, []).append(call)
                open_task = None
        assert open_task is None  # its last task's outcome came before decrease_collector_task_space
    assert set(outcomes) == set(handed) and all(len(v) == 1 for v in outcomes.values())  # exactly one outcome each
    failed = [c.failed_task for c in collectors if c.failed_task is not None]
    assert failed and all(outcomes[t] == ["notify_fail_collector_task"] for t in failed)
    assert sum(v == ["finish_collector_task"] for v in outcomes.values()) >= 4

    # the end: request_end with the run's reason, once the commander said why
    ends = [c for c in calls if c[0] == "request_end"]
    assert ends and ends[0][2] == coordinator.end_reason
    assert names.index("request_end") < names.index("finish_learner_task")
