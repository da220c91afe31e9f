"""The one supervisor of ding -m parallel's processes and -P slurm's steps (ding/parallel/launch/supervisor.py): its
restart policy and its SIGTERM -> SIGKILL escalation, with plain Python processes for roles. The whole-run behaviour
is covered by tests/e2e (test_parallel_cli, test_parallel_faults, test_two_learners) and tests/slurm."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

from ding.parallel.launch.supervisor import RoleId, RoleSupervisor


class _Starter:
    what = ""
    clean_exit_ends = False
    end_now = signal.SIGKILL

    def __init__(self, codes: dict[str, str]) -> None:
        self.codes, self.started, self.closed = codes, [], 0

    def start(self, role, log_path):
        self.started.append(role.name)
        with open(log_path, "ab") as log:
            return subprocess.Popen([sys.executable, "-c", self.codes[role.name]], stdout=log,
                                    stderr=subprocess.STDOUT)

    def close(self):
        self.closed += 1


def _run_until_exit(sup: RoleSupervisor, name: str) -> None:
    sup.children[name].proc.wait(timeout=30)
    sup.tick()


def test_a_crashed_role_is_restarted_until_max_restarts_then_the_run_fails(tmp_path):
    crash = "print('boom'); raise SystemExit(3)"
    starter = _Starter({"learner0": crash})
    said, failed = [], []
    with RoleSupervisor(starter, str(tmp_path), max_restarts=2) as sup:
        sup.report_to(said.append, failed.append, lambda: False)
        sup.start(RoleId("learner0", "learner"))
        for _ in range(3):
            _run_until_exit(sup, "learner0")
    assert said == ["learner 'learner0' exited with code 3; restarting it (1/2)",
                    "learner 'learner0' exited with code 3; restarting it (2/2)"]
    assert len(failed) == 1 and failed[0].startswith("learner 'learner0' exited with code 3 and was restarted 2 times")
    assert "boom" in failed[0]  # the last lines of its log
    assert starter.started == ["learner0"] * 3 and starter.closed == 1
    sup.tick()
    assert len(failed) == 1  # after a failure nothing more is watched


def test_a_collector_out_of_restarts_is_let_go_while_others_run_and_nothing_restarts_while_the_run_ends(tmp_path):
    starter = _Starter({"collector0": "raise SystemExit(1)", "collector1": "import time; time.sleep(60)"})
    said, failed, ending = [], [], [False]
    sup = RoleSupervisor(starter, str(tmp_path), max_restarts=0)
    with sup:
        sup.report_to(said.append, failed.append, lambda: ending[0])
        sup.start(RoleId("collector1", "collector"))
        sup.start(RoleId("collector0", "collector"))
        _run_until_exit(sup, "collector0")
        assert said == ["collector 'collector0' exited with code 1; not restarted (max_restarts 0); the other "
                        "collectors go on"] and not failed
        ending[0] = True
        sup.children["collector1"].proc.kill()
        sup.children["collector1"].proc.wait(timeout=30)
        sup.tick()
        assert len(said) == 1 and not failed and starter.started == ["collector1", "collector0"]
        sup.stop(grace=0.0)


def test_stop_escalates_from_sigterm_to_sigkill(tmp_path):
    stubborn = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True);"
                " time.sleep(60)")
    starter = _Starter({"collector0": stubborn, "learner0": "import time; time.sleep(60)"})
    sup = RoleSupervisor(starter, str(tmp_path), max_restarts=0)
    with sup:
        for name in ("collector0", "learner0"):
            sup.start(RoleId(name, name.rstrip("0")))
        log = tmp_path / "log" / "collector0" / "process.log"
        while "ready" not in (log.read_text() if log.exists() else ""):
            assert sup.children["collector0"].running()
            time.sleep(0.05)
        sup.stop(grace=0.0, term_wait=0.5)
    assert sup.children["learner0"].proc.returncode == -signal.SIGTERM
    assert sup.children["collector0"].proc.returncode == -signal.SIGKILL
    assert not sup.alive() and starter.closed >= 1
