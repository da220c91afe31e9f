"""``ding -m parallel`` places its real processes (system_config.cpu_affinity): 'auto' pins the training process to a
core of its own and moves the other roles off it while it trains flat out (CartPole's learner does); 'off' leaves
every process on all the CPUs it was given."""
from __future__ import annotations

import os
import signal

import pytest

from ._parallel import ding_cmd, processes_mentioning, read_log, role_pid, start, wait_for, write_config

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="CPU placement needs Linux and a CPU to spare")


def _cpus(pid: int) -> frozenset[int] | None:
    """Every thread's CPUs of process ``pid``: one set, or None while they disagree (the governor moves a process
    thread by thread; a thread may also end while it is read)."""
    sets = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # (gone: a process that carried the role's name for a moment, e.g. a child before its rename)
        return None
    for tid in tids:
        try:
            sets.add(frozenset(os.sched_getaffinity(int(tid))))
        except OSError:
            continue
    return next(iter(sets)) if len(sets) == 1 else None


def _placed_run(workdir, exp: str, setting: str, until=None) -> tuple[dict[str, frozenset[int]], str]:
    """Run until the first evaluation (and until ``until(cpus by process)`` holds, if given), read every process's
    CPUs, then Ctrl-C."""
    # the stop value out of reach: a run that reached 195 before the governor moved anything would end the wait
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9}}, system={"cpu_affinity": setting})
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "100000"), workdir)
    try:
        pids = {name: wait_for(lambda n=name: role_pid(workdir, n), 90, name, proc=proc)
                for name in ("learner0", "collector0", "collector1")}
        wait_for(lambda: (os.path.exists(os.path.join(str(workdir), exp, "log", "eval.csv"))), 90,
                 "the first evaluation", proc=proc)  # the roles have started every thread they need by now

        def look() -> dict[str, frozenset[int] | None]:  # (the pids found again each time: see _cpus)
            now = {name: role_pid(workdir, name) for name in pids}
            seen = {name: _cpus(pid) if pid else None for name, pid in now.items()}
            seen["launcher"] = _cpus(proc.pid)
            return seen

        def settled() -> dict[str, frozenset[int]] | None:
            seen = look()
            if any(cpus is None for cpus in seen.values()):
                return None
            return seen if until is None or until(seen) else None

        seen = wait_for(settled, 60, "the placement asked for", proc=proc)
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


@pytest.mark.skipif(hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 4,
                    reason="'auto' places nothing with a CPU for each of the run's 4 processes")
@pytest.mark.timeout(240)
def test_auto_pins_the_trainer_and_moves_the_others_off_its_core_while_it_trains_flat_out(workdir):
    allowed = frozenset(os.sched_getaffinity(0))

    def others_apart(seen: dict[str, frozenset[int]]) -> bool:
        trainer = seen["learner0"]
        return len(trainer) == 1 and all(cpus == allowed - trainer for k, cpus in seen.items() if k != "learner0")

    seen, log = _placed_run(workdir, "placed", "auto", until=others_apart)
    assert "ding: CPU placement: learner0's training on CPU" in log and "kept off it while it trains flat out" in log
    trainer = seen.pop("learner0")
    assert len(trainer) == 1 and trainer <= allowed, (trainer, allowed)
    assert set(seen.values()) == {allowed - trainer}, seen


@pytest.mark.timeout(240)
def test_off_leaves_every_process_on_all_its_cpus(workdir):
    allowed = frozenset(os.sched_getaffinity(0))
    seen, log = _placed_run(workdir, "unplaced", "off")
    assert "CPU placement off (system_config.cpu_affinity='off')" in log, log
    assert all(cpus == allowed for cpus in seen.values()), seen
