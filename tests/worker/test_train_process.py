"""The learner's training process (ding/parallel/roles/learner/train_process.py): a task record's handler runs there and
its answer or its error (with the child's traceback) comes back; a killed process fails every waiting and later call
at once, naming how it ended; close() reaps it; and it never outlives the process that forked it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ding.parallel.roles.learner.train_process import TrainProcess, TrainProcessGone, TrainProcessTraceback, can_split

pytestmark = pytest.mark.skipif(can_split() is not None, reason="the training process is forked")


def _handlers():
    def boom(text: str) -> None:
        raise ValueError(f"bad record {text}")

    def slow(seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    return {int: lambda n: (n * 2, os.getpid()), str: boom, float: slow, bytes: lambda b: threading.Lock()}, \
        lambda: None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_answers_and_errors_come_back_from_the_child():
    proc = TrainProcess("learner0", _handlers)
    try:
        doubled, pid = proc.call(21, timeout=30)
        assert doubled == 42 and pid == proc.pid != os.getpid()
        with pytest.raises(RuntimeError, match="ValueError: bad record x") as info:
            proc.call("x", timeout=30)
        cause = info.value.__cause__
        assert isinstance(cause, TrainProcessTraceback) and "in boom" in str(cause) and "ValueError" in str(cause)
        with pytest.raises(RuntimeError, match="runs no list"):
            proc.call([1], timeout=30)
        with pytest.raises(RuntimeError, match="the answer could not be sent"):  # (a lock does not pickle)
            proc.call(b"x", timeout=30)
        assert proc.call(5, timeout=30)[0] == 10  # an error fails that call only
    finally:
        proc.close(timeout=10)
    assert not _alive(proc.pid)


def test_a_killed_child_fails_waiting_and_later_calls_at_once():
    proc = TrainProcess("learner0", _handlers)
    try:
        out: list = []
        waiting = threading.Thread(target=lambda: out.append(_catch(lambda: proc.call(60.0, timeout=120))))
        waiting.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        waiting.join(30)
        assert not waiting.is_alive() and time.monotonic() - t0 < 10
        assert isinstance(out[0], TrainProcessGone) and "SIGKILL" in str(out[0])
        with pytest.raises(TrainProcessGone, match="training process .* exited with signal SIGKILL"):
            proc.call(1, timeout=30)
        assert not proc.alive
    finally:
        proc.close(timeout=5)


def test_an_unanswered_call_times_out():
    proc = TrainProcess("learner0", _handlers)
    try:
        with pytest.raises(TimeoutError, match="did not answer float within 0.3 s"):
            proc.call(5.0, timeout=0.3)
    finally:
        t0 = time.monotonic()
        proc.close(timeout=10)  # the child's handler is still sleeping: close does not wait for it
        assert time.monotonic() - t0 < 10 and not _alive(proc.pid)


def _catch(fn):
    try:
        return fn()
    except BaseException as e:  # noqa: BLE001 -- the test looks at it
        return e


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_dies_with_its_parent(tmp_path):
    script = textwrap.dedent("""
        import os, sys, time
        from ding.parallel.roles.learner.train_process import TrainProcess
        proc = TrainProcess("learner0", lambda: ({int: lambda n: n}, lambda: None))
        assert proc.call(1, timeout=30) == 1
        print(proc.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()  # kill -9: no close, no cleanup code runs in the parent
        parent.wait(30)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_learner_whose_training_process_dies_ends_with_an_error():
    """The comm learner's half: its training process killed (out of memory, say), the role stops serving and ends
    with exit status 1, so `ding -m parallel` restarts it from its checkpoint instead of it answering every task with
    the same error."""
    from ding.parallel.protocol import GetDataTask
    from ding.worker import FlaskFileSystemLearner

    comm = FlaskFileSystemLearner({}, name="learner0", token="t" * 32)
    try:
        assert comm._trainer is not None and comm._trainer.alive
        os.kill(comm._trainer.pid, signal.SIGKILL)
        assert comm.wait(30)  # the slave closed by itself
        assert comm.exit_code == 1
        with pytest.raises(TrainProcessGone, match="SIGKILL"):
            comm._relay(GetDataTask(wait_s=1))
    finally:
        comm.close()
