"""``ding -m parallel`` places its real processes (system_config.cpu_affinity): 'auto' pins the training process to a
core of its own and leaves the other roles on every CPU; 'exclusive' also keeps every other role and the launcher off
that core; 'off' leaves every process on all the CPUs it was given."""
from __future__ import annotations

import os
import signal

import pytest

from ._parallel import ding_cmd, processes_mentioning, read_log, role_pid, start, wait_for, write_config

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="CPU placement needs Linux and a CPU to spare")


def _cpus(pid: int) -> frozenset[int]:
    """Every thread's CPUs of process ``pid`` (they must agree: one set)."""
    sets = {frozenset(os.sched_getaffinity(int(tid))) for tid in os.listdir(f"/proc/{pid}/task")}
    assert len(sets) == 1, f"threads of {pid} disagree: {sets}"
    return next(iter(sets))


def _placed_run(workdir, exp: str, setting: str) -> tuple[dict[str, frozenset[int]], str]:
    cfg = write_config(workdir, exp, system={"cpu_affinity": setting})
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "100000"), workdir)
    try:
        trainer = wait_for(lambda: role_pid(workdir, "trainer0"), 90, "learner0's training process", proc=proc)
        pids = {name: wait_for(lambda n=name: role_pid(workdir, n), 30, name, proc=proc)
                for name in ("learner0", "collector0", "collector1")}
        wait_for(lambda: (os.path.exists(os.path.join(str(workdir), exp, "log", "eval.csv"))), 90,
                 "the first evaluation", proc=proc)  # the roles have started every thread they need by now
        seen = {name: _cpus(pid) for name, pid in pids.items()}
        seen["trainer0"] = _cpus(trainer)
        seen["launcher"] = _cpus(proc.pid)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    wait_for(lambda: not processes_mentioning(str(workdir)), 30, "every role process to exit")
    return seen, read_log(workdir)


@pytest.mark.timeout(240)
def test_auto_pins_the_trainer_and_leaves_the_other_roles_every_cpu(workdir):
    allowed = frozenset(os.sched_getaffinity(0))
    seen, log = _placed_run(workdir, "placed", "auto")
    assert "ding: CPU placement: learner0's training on CPU" in log and "the other roles on every CPU" in log, log
    trainer = seen.pop("trainer0")
    assert len(trainer) == 1 and trainer <= allowed, (trainer, allowed)
    assert all(cpus == allowed for cpus in seen.values()), seen


@pytest.mark.timeout(240)
def test_exclusive_keeps_every_other_role_off_the_trainers_core(workdir):
    allowed = frozenset(os.sched_getaffinity(0))
    seen, log = _placed_run(workdir, "apart", "exclusive")
    assert "cpu_affinity='exclusive'" in log, log
    trainer = seen.pop("trainer0")
    assert len(trainer) == 1 and trainer <= allowed, (trainer, allowed)
    shared = set(seen.values())
    assert len(shared) == 1, seen  # the learner's HTTP half, the collectors and the launcher (the coordinator) share
    others = shared.pop()
    assert others and not others & trainer and others | trainer <= allowed, (others, trainer)


@pytest.mark.timeout(240)
def test_off_leaves_every_process_on_all_its_cpus(workdir):
    allowed = frozenset(os.sched_getaffinity(0))
    seen, log = _placed_run(workdir, "unplaced", "off")
    assert "CPU placement off (system_config.cpu_affinity='off')" in log, log
    assert all(cpus == allowed for cpus in seen.values()), seen
