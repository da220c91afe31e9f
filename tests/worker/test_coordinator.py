"""The coordinator's task flow against in-process fake slaves over real loopback HTTP (no learner/collector
processes): pacing, evaluation and stop, deadlines and reassignment, lost slaves, the data file lifecycle."""
from __future__ import annotations

import copy
import os
import threading
import time

import pytest
import torch

from ding.config import compile_config_parallel
from ding.parallel.files import from_columns, write_policy
from ding.parallel.transport import Slave
from ding.torch_utils import save_file
from ding.worker import Coordinator

TOKEN = "c" * 32
pytestmark = pytest.mark.timeout(120)


def _cfg(exp="coord", buffer_size=1000, collector_task_timeout=30.0, heartbeat_timeout=10.0, buffer=None,
         **commander):
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    main, create, system = (copy.deepcopy(c) for c in (main_config, create_config, system_config))
    main.exp_name = exp
    main.policy.learn.batch_size = 4
    main.policy.learn.update_per_collect = 2
    main.policy.collect.n_sample = 8
    main.policy.eval.evaluator.eval_freq = 5
    main.policy.other.replay_buffer.replay_buffer_size = buffer_size
    if buffer:
        create.replay_buffer = dict(type=buffer.pop("type"))
        main.policy.other.replay_buffer.update(buffer)
    main.policy.other.commander.update(commander)
    system.path_data = f"./{exp}/data"
    system.path_policy = f"./{exp}/policy"
    system.coordinator = dict(collector_task_timeout=collector_task_timeout, heartbeat_timeout=heartbeat_timeout,
                              startup_timeout=20.0)
    return compile_config_parallel(main, create, system, seed=0)


class FakeLearner:
    """Answers learner tasks like a learner that trains instantly; records what it was given."""

    def __init__(self, check_files=True, learn_delay=0.0):
        self.step = 0
        self.batches: list[list[dict]] = []
        self.missing: list[str] = []
        self.check_files = check_files
        self.learn_delay = learn_delay
        self.path_data = None
        self.slave = Slave("learner0", "learner", token=TOKEN, heartbeat_interval=0.1, handlers={
            "learner_start_task": self.start, "learner_get_data_task": self.get_data,
            "learner_learn_task": self.learn, "learner_close_task": lambda p: {"learner_step": self.step}})

    def start(self, p):
        self.path_data = p["path_data"]
        write_policy(os.path.join(p["path_policy"], p["policy_id"]), {"w": torch.zeros(2)}, 0)
        return {"learner_step": 0, "policy_iter": 0}

    def get_data(self, p):
        time.sleep(0.005)
        return {"demand": {"batch_size": 4, "n_batches": 2, "cur_learner_iter": self.step}}

    def learn(self, p):
        infos = []
        for batch in map(from_columns, p["data"]):
            if self.check_files:
                self.missing += [m["data_id"] for m in batch
                                 if not os.path.exists(os.path.join(self.path_data, m["data_id"]))]
            time.sleep(self.learn_delay)
            self.batches.append(batch)
            self.step += 1
            infos.append({"learner_step": self.step, "policy_iter": self.step, "priority_info": None})
        return {"infos": infos}


class FakeCollector:
    """Answers collector tasks: collect tasks write real data files; evaluations return scripted returns."""

    def __init__(self, name, eval_returns, block=None):
        self.name = name
        self.eval_returns = list(eval_returns)
        self.tasks: list[dict] = []
        self.block = block
        self.slave = Slave(name, "collector", token=TOKEN, heartbeat_interval=0.1, handlers={
            "collector_start_task": self.start, "collector_data_task": self.data,
            "collector_close_task": lambda p: {}})

    def start(self, p):
        self.path_data = p["path_data"]
        return {}

    def data(self, p):
        self.tasks.append(p)
        if self.block is not None:
            self.block.wait(30)
            raise RuntimeError("unblocked after the deadline")
        if p["eval_flag"]:
            ret = self.eval_returns.pop(0) if self.eval_returns else 0.0
            return {"eval_flag": True, "policy_iter": p["train_iter"], "eval_return_mean": ret,
                    "eval_return_std": 0.0}
        meta = []
        for i in range(p["n_sample"]):
            data_id = f"{p['task_id']}_{i}"
            save_file({"obs": torch.zeros(4).numpy(), "i": i}, os.path.join(self.path_data, data_id))
            meta.append({"data_id": data_id, "collect_iter": 0})
        return {"eval_flag": False, "metadata": meta, "envstep": p["n_sample"], "sample_count": len(meta)}


def _run(coordinator, slaves, timeout=60, release=None):
    coordinator.start()
    for s in slaves:
        s.slave.start()
        s.slave.join(coordinator.host, coordinator.port)
    try:
        assert coordinator.wait(timeout), "the run did not end"
    finally:
        coordinator.close()
        if release is not None:
            release()
        for s in slaves:
            s.slave.close()


def test_task_flow_pacing_and_stop_value(in_tmp_dir):
    cfg = _cfg()
    coordinator = Coordinator(cfg, token=TOKEN)
    learner = FakeLearner()
    collectors = [FakeCollector("collector0", [10.0] * 3 + [200.0]), FakeCollector("collector1", [10.0] * 3 + [200.0])]
    _run(coordinator, [learner, *collectors])
    assert "stop value" in coordinator.end_reason and coordinator.fatal_error is None
    status = coordinator.status()
    # pacing: update_per_collect / n_sample = 2 / 8 train iterations per collected sample
    assert 0 < status["served_batches"] <= 0.25 * status["pushed"]
    assert learner.step == len(learner.batches) <= status["served_batches"]
    assert all(len(b) == 4 for b in learner.batches) and learner.missing == []
    assert all(c.slave.wait(5) for c in collectors) and learner.slave.wait(5)  # every slave was shut down
    collect_tasks = [t for c in collectors for t in c.tasks if not t["eval_flag"]]
    assert collect_tasks and all(0 < t["collect_setting"]["eps"] <= 0.95 for t in collect_tasks)
    evals = [t for c in collectors for t in c.tasks if t["eval_flag"]]
    assert 2 <= len(evals) <= 8
    assert os.listdir(os.path.join("coord", "data")) == []  # every data file is gone at the end


def test_collector_task_past_its_deadline_fails_and_the_work_moves_on(in_tmp_dir):
    cfg = _cfg(exp="deadline", collector_task_timeout=0.5)
    cfg.system.coordinator.eval_task_timeout = 0.5  # the stuck collector's first task is an evaluation
    coordinator = Coordinator(cfg, token=TOKEN)
    block = threading.Event()
    stuck = FakeCollector("collector0", [], block=block)
    good = FakeCollector("collector1", [10.0, 200.0])
    t0 = time.monotonic()
    _run(coordinator, [FakeLearner(), stuck, good], release=block.set)
    assert "stop value" in coordinator.end_reason
    assert coordinator.stats["failed_collector_tasks"] >= 1
    assert coordinator.stats["tasks_collector1"] > 0 and coordinator.stats["tasks_collector0"] == 0
    assert time.monotonic() - t0 < 30


def test_lost_collector_tasks_are_handed_out_again(in_tmp_dir):
    cfg = _cfg(exp="lost", heartbeat_timeout=0.5)
    coordinator = Coordinator(cfg, token=TOKEN)
    block = threading.Event()
    frozen = FakeCollector("collector0", [], block=block)
    good = FakeCollector("collector1", [10.0, 10.0, 200.0])
    orig = frozen.data

    def freeze(p):  # the process "hangs": heartbeats stop and the task never answers
        frozen.slave._stopping.set()
        return orig(p)

    frozen.slave.handlers["collector_data_task"] = freeze

    def release():
        block.set()
        frozen.slave._stopping.clear()

    _run(coordinator, [FakeLearner(), frozen, good], release=release)
    assert "stop value" in coordinator.end_reason
    assert coordinator.stats["lost_collector"] == 1 and coordinator.stats["failed_collector_tasks"] >= 1


def test_evicted_data_files_are_deleted_but_not_while_a_learn_task_needs_them(in_tmp_dir):
    cfg = _cfg(exp="evict", buffer_size=16)
    coordinator = Coordinator(cfg, token=TOKEN)
    learner = FakeLearner(learn_delay=0.01)
    sizes = []
    collector = FakeCollector("collector0", [10.0] * 6 + [200.0])
    orig = collector.data

    def data(p):
        out = orig(p)
        sizes.append(len(os.listdir(collector.path_data)))
        return out

    collector.slave.handlers["collector_data_task"] = data
    _run(coordinator, [learner, collector])
    assert learner.missing == [], "a data file was deleted while a learn task still needed it"
    assert coordinator.stats["deleted_files"] > 0
    # the directory holds the buffer's items, files pinned by learn tasks in flight, and the task being written
    assert max(sizes) <= 16 + 2 * 2 * 4 + 8 + 8


def test_no_learner_within_startup_timeout_is_a_clear_error(in_tmp_dir):
    cfg = _cfg(exp="nolearner")
    cfg.system.coordinator.startup_timeout = 0.5
    coordinator = Coordinator(cfg, token=TOKEN)
    coordinator.start()
    try:
        assert coordinator.wait(10)
    finally:
        coordinator.close()
    assert "no learner came up within startup_timeout (0.5 s)" in coordinator.fatal_error


def test_an_error_in_a_coordinator_thread_ends_the_run_instead_of_hanging_it(in_tmp_dir):
    cfg = _cfg(exp="boom")

    def broken_observer(record):
        raise RuntimeError("observer bug")

    coordinator = Coordinator(cfg, token=TOKEN, on_eval=broken_observer)
    _run(coordinator, [FakeLearner(), FakeCollector("collector0", [10.0])], timeout=30)
    assert "internal error" in coordinator.fatal_error and "observer bug" in coordinator.fatal_error


def test_items_used_up_while_sampled_keep_their_files_until_trained(in_tmp_dir):
    """max_use=1 removes an item at the moment it is sampled: its file must survive until the learn task ends."""
    cfg = _cfg(exp="maxuse", buffer={"type": "advanced", "max_use": 1})
    coordinator = Coordinator(cfg, token=TOKEN)
    learner = FakeLearner(learn_delay=0.005)
    _run(coordinator, [learner, FakeCollector("collector0", [10.0] * 4 + [200.0])])
    assert learner.batches and learner.missing == []
    assert coordinator.stats["deleted_files"] > 0
    assert os.listdir(os.path.join("maxuse", "data")) == []


class MalformedCollector(FakeCollector):
    """Answers every other task with one kind of malformed answer (fault class 2), the rest like FakeCollector."""

    def __init__(self, name, eval_returns, outside):
        super().__init__(name, eval_returns)
        self.outside = outside
        self.kinds = ["missing field", "wrong type", "non-finite", "escaping data_id", "directory data_id",
                      "other task's data_id", "non-numeric eval return"]
        self.sent: list[str] = []
        self._good_next = False

    def data(self, p):
        if self._good_next or not self.kinds:
            self._good_next = False
            return super().data(p)
        if p["eval_flag"] != (self.kinds[0] == "non-numeric eval return"):
            return super().data(p)
        kind = self.kinds.pop(0)
        self.sent.append(kind)
        self._good_next = True  # fewer than 3 failures in a row: the collector is not dismissed
        good = super().data(p)
        if kind == "missing field":
            del good["metadata"]
        elif kind == "wrong type":
            good["envstep"] = str(good["envstep"])
        elif kind == "non-finite":
            good["duration"] = float("nan")
        elif kind == "escaping data_id":
            good["metadata"][0]["data_id"] = "../" + os.path.basename(self.outside)
        elif kind == "directory data_id":
            os.remove(os.path.join(self.path_data, good["metadata"][0]["data_id"]))
            os.mkdir(os.path.join(self.path_data, good["metadata"][0]["data_id"]))
            self.directory = good["metadata"][0]["data_id"]
        elif kind == "other task's data_id":
            good["metadata"][0]["data_id"] = "collector_task_999999_0"
        else:
            good["eval_return_mean"] = "high"
        return good


class MalformedLearner(FakeLearner):
    """Answers its second learn task with a malformed result (a string step, a NaN priority), then trains on."""

    def __init__(self):
        super().__init__()
        self.learns = 0

    def learn(self, p):
        out = super().learn(p)
        self.learns += 1
        if self.learns == 2:
            out["infos"][0]["learner_step"] = "many"
        if self.learns == 3:
            out["infos"][0]["priority_info"] = {"replay_unique_id": [0], "replay_buffer_idx": [0],
                                                "priority": [float("nan")]}
        return out


def test_malformed_answers_fail_their_task_and_the_run_goes_on(in_tmp_dir):
    cfg = _cfg(exp="malformed")
    coordinator = Coordinator(cfg, token=TOKEN)
    outside = os.path.abspath(os.path.join("malformed", "precious"))
    os.makedirs("malformed", exist_ok=True)
    with open(outside, "w") as f:
        f.write("keep")
    bad = MalformedCollector("collector0", [10.0] * 8 + [200.0], outside)
    learner = MalformedLearner()
    _run(coordinator, [learner, bad], timeout=90)
    assert coordinator.fatal_error is None and "stop value" in coordinator.end_reason
    assert bad.kinds == [], f"not every malformed answer was sent: {bad.kinds}"
    assert learner.learns >= 3
    assert coordinator.stats["malformed_answers"] == len(bad.sent) + 2
    assert coordinator.stats["failed_collector_tasks"] == len(bad.sent)
    assert open(outside).read() == "keep"  # a data id never reaches outside path_data
    assert os.listdir(os.path.join("malformed", "data")) == [bad.directory]  # only regular files are deleted
    log = open(os.path.join("malformed", "log", "coordinator", "coordinator_logger.txt")).read()
    for field in ("'metadata' is missing", "'envstep' must be an int", "'duration' must be a finite number",
                  "'metadata[0].data_id'", "not a regular file", "not a data file of task",
                  "'eval_return_mean' must be a number", "'infos[0].learner_step' must be an int",
                  "'infos[0].priority_info.priority[0]' must be a finite number"):
        assert field in log, field
    assert log.count("collector 'collector0' at 127.0.0.1:") >= len(bad.sent)


def test_a_malformed_start_answer_dismisses_that_collector_only(in_tmp_dir):
    cfg = _cfg(exp="badstart")
    coordinator = Coordinator(cfg, token=TOKEN)
    bad = FakeCollector("collector0", [])
    bad.slave.handlers["collector_start_task"] = lambda p: {"started": "yes"}
    good = FakeCollector("collector1", [10.0, 200.0])
    _run(coordinator, [FakeLearner(), bad, good])
    assert coordinator.fatal_error is None and "stop value" in coordinator.end_reason
    assert coordinator.stats["malformed_answers"] == 1 and bad.tasks == [] and good.tasks
    assert bad.slave.wait(5)  # dismissed: shut down


class _FailingLearner(FakeLearner):
    """Fails its first ``fail`` learn tasks (as a learner whose task hit a bad file), then trains."""

    def __init__(self, fail: int) -> None:
        super().__init__()
        self.fail = fail

    def learn(self, p):
        if self.fail > 0:
            self.fail -= 1
            raise RuntimeError("a learn task that failed on its data")
        return super().learn(p)


def test_a_failed_learn_task_drops_its_batches_and_the_run_goes_on(in_tmp_dir):
    """Issue 36, item 3: one learn task that fails on its data used to end the run; only repeated failure of the
    learner itself does."""
    coordinator = Coordinator(_cfg(), token=TOKEN)
    learner = _FailingLearner(fail=1)
    collectors = [FakeCollector("collector0", [10.0] * 3 + [200.0])]
    _run(coordinator, [learner, *collectors])
    assert coordinator.fatal_error is None and "stop value" in coordinator.end_reason
    assert coordinator.stats["failed_learn_tasks"] == 1 and learner.step > 0
    log = ""
    for base, _, files in os.walk("coord"):
        log += "".join(open(os.path.join(base, f), errors="replace").read() for f in files if f.endswith(".txt"))
    assert "a learn task failed" in log and "(data from collector 'collector0')" in log, log[-3000:]


def test_a_learner_that_fails_every_learn_task_ends_the_run(in_tmp_dir):
    coordinator = Coordinator(_cfg(), token=TOKEN)
    learner = _FailingLearner(fail=10**6)
    _run(coordinator, [learner, FakeCollector("collector0", [10.0] * 100)])
    assert coordinator.fatal_error and "3 learn tasks in a row" in coordinator.fatal_error
