"""DirLock: one holder per directory across processes, released by the OS when the holder dies."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from ding.utils import DingError, DirLock, LockError
from ding.utils.lock import read_holder

_HOLDER = """
import sys
from ding.utils import DirLock
lock = DirLock(sys.argv[1], what="run").acquire()
print("locked", flush=True)
sys.stdin.readline()  # hold until told (or killed)
"""


@pytest.fixture
def holder(tmp_path):
    """A separate process holding the lock of ``tmp_path``; killed afterwards whatever happens."""
    procs = []

    def start(path=None):
        p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path or tmp_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == "locked"
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)
        p.stdin.close()
        p.stdout.close()


def test_second_holder_is_refused_with_directory_and_pid(tmp_path, holder):
    p = holder()
    with pytest.raises(LockError, match=re.escape(f"'{tmp_path}' is in use by another ding run (pid {p.pid};")):
        DirLock(str(tmp_path), what="run").acquire()
    assert issubclass(LockError, DingError)


def test_lock_is_released_when_the_holder_is_killed(tmp_path, holder):
    p = holder()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    with DirLock(str(tmp_path)) as lock:  # the OS dropped the dead holder's lock
        assert lock.held and read_holder(str(tmp_path)) == os.getpid()


def test_release_empties_the_lock_file_and_lets_the_next_holder_in(tmp_path):
    lock = DirLock(str(tmp_path)).acquire()
    with pytest.raises(LockError, match="in use by another ding process"):
        DirLock(str(tmp_path)).acquire()  # not re-entrant, even in one process
    lock.release()
    lock.release()  # idempotent
    with open(tmp_path / ".lock") as f:
        assert f.read() == ""
    with DirLock(str(tmp_path)):
        pass


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(LockError, match="not a directory"):
        DirLock(str(tmp_path / "nope")).acquire()


def test_a_run_directory_is_named_running_only_while_its_holder_lives(tmp_path, holder, monkeypatch):
    from ding.utils.lock import guard_run_dir, is_held

    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    proc = holder(run)
    assert is_held(str(run))
    with pytest.raises(LockError, match=re.escape(f"belongs to a running ding process (pid {proc.pid})")):
        guard_run_dir("run", "learner")
    proc.kill()  # ends without releasing: its pid stays in the lock file
    proc.wait(timeout=30)
    assert read_holder(str(run)) == proc.pid and not is_held(str(run))
    with pytest.raises(LockError) as info:
        guard_run_dir("run", "learner")
    assert "belongs to an earlier ding run" in str(info.value) and "running" not in str(info.value)
