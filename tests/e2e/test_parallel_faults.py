"""Peer faults of parallel mode with real processes: a role frozen past its heartbeat deadline (SIGSTOP) and
resumed (SIGCONT), a killed coordinator. Each run must end by itself, within a stated bound, with nothing left
running -- never a stall."""
from __future__ import annotations

import os
import signal
import time

import pytest

from ._parallel import (
    FAST_FAULTS,
    ding_cmd,
    kill_all,
    processes_mentioning,
    read_log,
    result,
    role_pid,
    start,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def workdir(tmp_path):
    yield tmp_path
    left = processes_mentioning(str(tmp_path))
    kill_all(tmp_path)
    assert not left, f"processes left behind: {left}"


def _coordinator_log(workdir, exp) -> str:
    with open(os.path.join(str(workdir), exp, "log", "coordinator", "coordinator_logger.txt"), errors="replace") as f:
        return f.read()


def _eval_rows(workdir, exp) -> int:
    path = os.path.join(str(workdir), exp, "log", "eval.csv")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return max(0, len(f.read().strip().splitlines()) - 1)


def _freeze(pid: int, seconds: float) -> None:
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("role", ["learner0", "collector0"])
def test_role_frozen_past_its_heartbeat_deadline_then_resumed_does_not_stall_the_run(workdir, role):
    exp = f"freeze_{role}"
    # no stop value: the run ends at its train-iteration limit, which it reaches only if training goes on
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 10**9}}, system=dict(FAST_FAULTS, max_restarts=0))
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "1500"), workdir)
    wait_for(lambda: _eval_rows(workdir, exp) >= 2, 120, "two evaluations", proc=proc)
    pid = wait_for(lambda: role_pid(workdir, role), 10, f"{role}'s pid")
    print("PID", pid, open(f"/proc/{pid}/cmdline").read().replace("\0", " "), time.strftime("%X"))
    _freeze(pid, 3 * FAST_FAULTS["coordinator"]["heartbeat_timeout"])  # declared lost, then it comes back
    t0 = time.monotonic()
    code = proc.wait(timeout=150)  # bound: a run that stalls would not end by itself
    log = read_log(workdir)
    assert code == 0, log
    r = result(workdir, exp)
    assert r["train_iter"] >= 1500, r
    clog = _coordinator_log(workdir, exp)
    assert f"'{role}' lost" in clog, clog[-3000:]
    print(f"{role} frozen: run ended {time.monotonic() - t0:.1f} s after the resume")
    assert not processes_mentioning(str(workdir))
