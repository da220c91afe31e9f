"""ding -m parallel's CPU placement: the plan (pure), its hand-over through the environment, the other runs' reserved
CPUs read from a /proc tree, pinning a real process with threads, and the launcher's view of its process tree (which
processes train). The placement of a real run's roles is checked
in tests/e2e/test_cpu_placement.py."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ding.parallel.launch.cpu_placement import (
    PLACEMENT_ENV,
    CpuPlacement,
    PlacementGovernor,
    RunTree,
    apply_placement,
    cpus_reserved_by_other_runs,
    format_cpus,
    pin_process,
    plan_placement,
)


def test_auto_pins_the_trainer_to_the_last_free_cpu_and_leaves_the_others_free():
    placement, why = plan_placement("auto", ["learner0"], 1, allowed=frozenset({0, 1}), reserved=frozenset())
    assert placement == CpuPlacement({"learner0": frozenset({1})})
    assert "learner0's training on CPU 1; the other roles kept off it while it trains flat out" in why
    assert "'off'" in why


def test_a_bigger_machine_with_two_learners_of_two_threads_each():
    placement, _ = plan_placement("auto", ["learner0", "learner1"], 2, allowed=frozenset(range(8)),
                                  reserved=frozenset())
    assert placement is not None
    assert placement.trainers == {"learner0": frozenset({4, 5}), "learner1": frozenset({6, 7})}


def test_a_cpu_held_by_another_runs_trainer_is_not_taken():
    placement, _ = plan_placement("auto", ["learner0"], 1, allowed=frozenset({0, 1, 2}), reserved=frozenset({2}))
    assert placement == CpuPlacement({"learner0": frozenset({1})})
    placement, why = plan_placement("auto", ["learner0"], 1, allowed=frozenset({0, 1}), reserved=frozenset({1}))
    assert placement is None and "1 held by another run's trainer" in why and "the OS places every role" in why


@pytest.mark.parametrize("allowed", [frozenset({0}), frozenset({3})])
def test_no_placement_without_a_core_to_spare(allowed):
    placement, why = plan_placement("auto", ["learner0"], 1, allowed=allowed, reserved=frozenset())
    assert placement is None
    assert "1 CPUs" in why and "needs 2" in why


def test_off_places_nothing_and_a_wrong_setting_is_refused():
    placement, why = plan_placement("off", ["learner0"], 1, allowed=frozenset({0, 1}), reserved=frozenset())
    assert placement is None and "cpu_affinity='off'" in why
    with pytest.raises(ValueError, match="cpu_affinity must be one of 'auto', 'off', got 'on'"):
        plan_placement("on", ["learner0"], 1, allowed=frozenset({0, 1}), reserved=frozenset())


def test_the_placement_travels_through_the_environment():
    placement = CpuPlacement({"learner0": frozenset({7}), "learner1": frozenset({5, 6})})
    text = placement.to_env()
    assert text == "learner0=7;learner1=5-6"
    assert CpuPlacement.from_env(text) == placement
    free = CpuPlacement({"learner0": frozenset({1})})
    assert free.to_env() == "learner0=1" and CpuPlacement.from_env("learner0=1") == free
    for bad in ("learner0=x", "learner1=", "learner0", "=1", "learner0=1-;learner1=0"):
        with pytest.raises(ValueError, match=PLACEMENT_ENV):
            CpuPlacement.from_env(bad)


def test_format_cpus_writes_the_kernels_list_format():
    assert format_cpus([5, 0, 2, 1]) == "0-2,5"
    assert format_cpus([3]) == "3"
    assert format_cpus([]) == ""


def _fake_proc(root, pid: int, comm: str, cpus: str) -> None:
    d = root / str(pid)
    d.mkdir()
    (d / "comm").write_text(comm + "\n")
    (d / "status").write_text(f"Name:\t{comm}\nCpus_allowed:\tff\nCpus_allowed_list:\t{cpus}\n")


def test_other_runs_trainers_are_read_from_proc(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    _fake_proc(tmp_path, 101, "ding-learner0", "7")  # another run's learner, pinned to its training CPU: held
    _fake_proc(tmp_path, 102, "ding-learner1", "5-6")  # a learner group's member: held
    _fake_proc(tmp_path, 103, "ding-collector0", "0-4")  # not a learner
    _fake_proc(tmp_path, 104, "ding-learner2", "0-7")  # not pinned: holds nothing
    _fake_proc(tmp_path, 105, "python", "3")  # not a ding learner, pinned or not
    (tmp_path / "self").mkdir()  # (not a pid)
    assert cpus_reserved_by_other_runs(str(tmp_path)) == frozenset({5, 6, 7})


def _pin_in_child(cpu: int, out) -> None:
    started = threading.Event()
    stop = threading.Event()

    def before() -> None:  # a thread that exists before the pin: it must move too
        started.set()
        stop.wait(10)

    t = threading.Thread(target=before)
    t.start()
    started.wait(10)
    ok = pin_process({cpu})
    after: list[set] = []
    t2 = threading.Thread(target=lambda: after.append(os.sched_getaffinity(0)))  # started after: inherits
    t2.start()
    t2.join()
    tids = os.listdir(f"/proc/{os.getpid()}/task")
    seen = {int(tid): os.sched_getaffinity(int(tid)) for tid in tids}
    stop.set()
    t.join()
    out.put((ok, seen, after[0]))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="pinning needs Linux and two CPUs to tell a pinned process from one that is not")
def test_pin_process_moves_every_thread_and_new_threads_inherit():
    cpu = max(os.sched_getaffinity(0))
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    p = ctx.Process(target=_pin_in_child, args=(cpu, out))
    p.start()
    try:
        ok, seen, after = out.get(timeout=30)
    finally:
        p.join(10)
    assert ok
    assert len(seen) >= 2 and all(cpus == {cpu} for cpus in seen.values()), seen
    assert after == {cpu}


def _apply_in_child(env: dict, trains: bool, out) -> None:
    out.put((apply_placement("learner0", trains=trains, env=env), os.sched_getaffinity(0)))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="pinning needs Linux and two CPUs")
def test_apply_placement_takes_this_processs_part():
    cpus = sorted(os.sched_getaffinity(0))
    auto = CpuPlacement({"learner0": frozenset({cpus[-1]})})
    ctx = mp.get_context("fork")
    for placement, trains, want, now_want in ((auto, True, {cpus[-1]}, {cpus[-1]}),
                                              (auto, False, None, set(cpus))):  # 'auto': the others stay free
        out = ctx.Queue()
        p = ctx.Process(target=_apply_in_child, args=({PLACEMENT_ENV: placement.to_env()}, trains, out))
        p.start()
        applied, now = out.get(timeout=30)
        p.join(10)
        assert applied == (frozenset(want) if want is not None else None) and now == now_want
    assert apply_placement("learner0", trains=True, env={}) is None  # no placement handed over: nothing changes


class _Readings:
    """A fake clock and fake CPU seconds per pid, and a record of every move the governor makes."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cpu: dict[int, float] = {10: 0.0}
        self.pins: list[tuple[frozenset, int]] = []

    def advance(self, seconds: float, busy: float, pid: int = 10) -> None:
        self.now += seconds
        self.cpu[pid] = self.cpu.get(pid, 0.0) + busy * seconds

    def governor(self) -> PlacementGovernor:
        return PlacementGovernor(frozenset({1}), frozenset({0, 1}), trainers=lambda: list(self.cpu),
                                 others=lambda: [20, 21], cpu_of=lambda pid: self.cpu.get(pid),
                                 pin=lambda cpus, pid: self.pins.append((frozenset(cpus), pid)) is None,
                                 clock=lambda: self.now)


def test_the_governor_moves_the_others_off_a_busy_trainers_core_and_back_when_it_waits():
    r = _Readings()
    g = r.governor()
    assert g.tick() is None and not r.pins  # the first look only reads
    r.advance(0.25, busy=0.7)
    assert g.tick() == pytest.approx(0.7) and not g.apart and not r.pins  # between the thresholds: nothing
    r.advance(0.25, busy=0.95)
    g.tick()
    assert g.apart and r.pins == [(frozenset({0}), 20), (frozenset({0}), 21)]
    r.advance(0.25, busy=0.7)  # above idle_below: stays apart (no flapping between the thresholds)
    g.tick()
    assert g.apart and len(r.pins) == 2
    r.advance(0.25, busy=0.3)  # the trainer waits for data: collection may use its core again
    g.tick()
    assert not g.apart and r.pins[2:] == [(frozenset({0, 1}), 20), (frozenset({0, 1}), 21)]
    assert g.switches == 2 and g.apart_s == pytest.approx(0.5)


def test_a_restarted_trainer_starts_a_new_reading_and_close_lets_the_others_back():
    r = _Readings()
    g = r.governor()
    g.tick()
    r.advance(0.25, busy=1.0)
    g.tick()
    assert g.apart
    r.cpu = {11: 5.0}  # trainer 10 is gone, 11 took its place with CPU seconds of its own: no reading to compare
    r.advance(0.25, busy=0.0, pid=11)
    assert g.tick() is None and g.apart
    r.advance(0.25, busy=0.1, pid=11)
    assert g.tick() == pytest.approx(0.1) and not g.apart
    r.advance(0.25, busy=1.0, pid=11)
    g.tick()
    assert g.apart
    g.close()
    assert not g.apart and r.pins[-2:] == [(frozenset({0, 1}), 20), (frozenset({0, 1}), 21)]


def test_the_governor_needs_a_cpu_for_the_others():
    with pytest.raises(ValueError, match="no CPU is left for the other roles"):
        PlacementGovernor(frozenset({0, 1}), frozenset({0, 1}), trainers=list, others=list)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="pinning needs Linux and two CPUs")
def test_a_process_pinned_to_a_trainers_cpu_trains_whatever_its_name():
    """A process on a trainer's CPUs alone (one a learner started inherits them) trains whatever its name: the
    governor counts it as a trainer and never moves it off its core."""
    cpu = max(os.sched_getaffinity(0))
    code = (f"import os, sys, time; os.sched_setaffinity(0, {{{cpu}}}); sys.stdout.write('ready\\n'); "
            "sys.stdout.flush(); time.sleep(30)")
    pinned = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    free = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pinned.stdout is not None and pinned.stdout.readline().strip() == "ready"
        tree = RunTree(os.getpid(), [frozenset({cpu})], roles=lambda: [pinned.pid, free.pid])
        deadline = time.monotonic() + 10
        while free.pid not in tree.others() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pinned.pid in tree.trainers() and pinned.pid not in tree.others()
        assert free.pid in tree.others() and os.getpid() in tree.others()
    finally:
        for p in (pinned, free):
            p.kill()
            p.wait()


def test_only_the_runs_roles_and_what_runs_under_them_are_moved():
    """Issue 36, item 16: the governor moved every descendant of the process that called parallel_pipeline, a
    notebook's unrelated subprocesses too; only the run's roles (and their own children) are the run's."""
    role = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                             "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
                             "print(c.pid, flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    grandchild = None
    try:
        assert role.stdout is not None
        grandchild = int(role.stdout.readline())
        tree = RunTree(os.getpid(), [frozenset({10_000})], roles=lambda: [role.pid])
        others = tree.others()
        assert role.pid in others and grandchild in others and os.getpid() in others
        assert unrelated.pid not in others and unrelated.pid not in tree.trainers()
    finally:
        if grandchild is not None:
            os.kill(grandchild, signal.SIGKILL)
        for p in (role, unrelated):
            p.kill()
            p.wait()


@pytest.mark.parametrize("cpus, placed", [(8, False), (5, False), (4, True), (2, True)])
def test_a_machine_with_a_cpu_for_every_process_of_the_run_places_nothing(monkeypatch, cpus, placed):
    """Issue 37: with at least as many CPUs as the run has processes (the launcher and its 4 roles here), no process
    is pinned or moved by default; the CPU count is faked where the launcher reads it (this process's affinity)."""
    from easydict import EasyDict

    from ding.parallel.launch.local import plan_run_placement
    from ding.parallel.launch.supervisor import RoleId

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(os, "listdir", lambda path: [])  # (no other run's trainer holds a CPU)
    roles = [RoleId("learner0", "learner")] + [RoleId(f"collector{i}", "collector") for i in range(3)]
    placement, why = plan_run_placement(EasyDict(system=EasyDict()), roles)  # the default cpu_affinity, 'auto'
    if placed:
        assert placement == CpuPlacement({"learner0": frozenset({cpus - 1})}), why
    else:
        assert placement is None and f"{cpus} CPUs for the run's 5 processes: a CPU for each" in why, why
