"""Liveness of the coordinator against in-process fake slaves over loopback HTTP: a learner that is alive to its
heartbeats but makes no progress is dismissed by the watchdog, and a run without it ends with one message."""
from __future__ import annotations

import os
import threading
import time

import pytest

from ding.worker import Coordinator

from .test_coordinator import TOKEN, FakeCollector, FakeLearner, _cfg, _run

pytestmark = pytest.mark.timeout(120)


def test_learner_alive_but_not_training_is_dismissed_and_the_run_ends_with_a_clear_error(in_tmp_dir):
    cfg = _cfg(exp="stuck")
    cfg.system.coordinator.learner_task_timeout = 3.0  # stalled after half of it: 1.5 s
    cfg.system.coordinator.startup_timeout = 2.0
    coordinator = Coordinator(cfg, token=TOKEN)
    release = threading.Event()
    learner = FakeLearner()

    def never_learns(p):  # heartbeats go on, the learn task never answers (a deadlocked training thread)
        release.wait(60)
        return {"infos": []}

    learner.slave.handlers["learner_learn_task"] = never_learns
    t0 = time.monotonic()
    _run(coordinator, [learner, FakeCollector("collector0", [10.0] * 50)], timeout=30, release=release.set)
    elapsed = time.monotonic() - t0
    assert coordinator.stats["stalled_learner"] == 1
    assert coordinator.fatal_error is not None and "every learner is gone" in coordinator.fatal_error
    assert learner.slave.wait(5), "the dismissed learner was not shut down"
    assert elapsed < 20, f"the stalled run took {elapsed:.1f} s to end"


def test_slow_but_training_learner_is_not_dismissed(in_tmp_dir):
    cfg = _cfg(exp="slow")
    cfg.system.coordinator.learner_task_timeout = 2.0  # stalled after half of it: 1.0 s
    coordinator = Coordinator(cfg, token=TOKEN)
    learner = FakeLearner(learn_delay=0.2)  # each batch takes a while, but the steps keep coming
    _run(coordinator, [learner, FakeCollector("collector0", [10.0] * 6 + [200.0])], timeout=60)
    assert coordinator.fatal_error is None and "stop value" in coordinator.end_reason
    assert coordinator.stats["stalled_learner"] == 0


def test_collect_task_past_its_deadline_is_cancelled_in_the_collector_and_leaves_no_file(in_tmp_dir):
    cfg = _cfg(exp="cancel", collector_task_timeout=0.5)
    coordinator = Coordinator(cfg, token=TOKEN)
    collector = FakeCollector("collector0", [10.0, 10.0, 200.0])
    orig = collector.data
    seen: dict[str, float] = {}

    def slow_first_task(p):  # the first collect task overruns: it writes files until told to stop
        if p["eval_flag"] or seen:
            return orig(p)
        seen["task_id"], t0 = p["task_id"], time.monotonic()
        for i in range(100):
            if collector.slave.task_cancelled():
                seen["cancelled_after"] = time.monotonic() - t0
                raise RuntimeError("cancelled")
            with open(os.path.join(collector.path_data, f"{p['task_id']}_{i}"), "wb") as f:
                f.write(b"x")
            time.sleep(0.05)
        return orig(p)

    collector.slave.handlers["collector_data_task"] = slow_first_task
    _run(coordinator, [FakeLearner(check_files=False), collector], timeout=60)
    assert "stop value" in coordinator.end_reason and coordinator.fatal_error is None
    assert coordinator.stats["failed_collector_tasks"] == 1
    assert seen.get("cancelled_after", 99) < 2.0, seen
    left = [n for n in os.listdir(os.path.join("cancel", "data")) if n.startswith(seen["task_id"] + "_")]
    assert left == [], f"files of the cancelled task were left: {left}"


def test_evaluation_has_its_own_deadline(in_tmp_dir):
    cfg = _cfg(exp="evaldl", collector_task_timeout=0.5)
    cfg.system.coordinator.eval_task_timeout = 10.0
    coordinator = Coordinator(cfg, token=TOKEN)
    collector = FakeCollector("collector0", [10.0, 200.0])
    orig = collector.data

    def slow_eval(p):  # evaluations take longer than a collect task may
        if p["eval_flag"]:
            time.sleep(1.0)
        return orig(p)

    collector.slave.handlers["collector_data_task"] = slow_eval
    _run(coordinator, [FakeLearner(), collector], timeout=60)
    assert "stop value" in coordinator.end_reason and coordinator.fatal_error is None
    assert coordinator.stats["failed_collector_tasks"] == 0
