"""An exclusive, process-lifetime lock on a directory (``<dir>/.lock``), held with ``fcntl.flock``.

The OS releases the lock when the holding process exits, also on a crash or ``kill -9``: a stale lock cannot block
the next run. The lock file is never deleted (deleting a locked file lets a third process lock a new file of the
same name while the second still waits on the old one); it holds the holder's pid while the lock is held and is
emptied on release.
"""
from __future__ import annotations

import errno
import fcntl
import os
from typing import Any

from .errors import LockError

LOCK_NAME = ".lock"

# Run directories this process may write: real path -> the DirLock it holds on it (None: a run another process holds
# that this process joined as one of its roles, see :func:`join_run_dir`).
_OWNED: dict[str, DirLock | None] = {}


class DirLock:
    """``with DirLock(path, what='run'):`` -- hold ``<path>/.lock`` exclusively, or raise :class:`LockError`.

    ``what`` names the user of the directory in the refusal; ``hint`` says what the refused user can do instead.
    The directory must exist. Not re-entrant: a second ``DirLock`` on the same directory, even in the same process,
    is refused.
    """

    def __init__(self, path: str, what: str = "process", hint: str = "wait for it to finish or stop it") -> None:
        self.path = os.fspath(path)
        self.lock_path = os.path.join(self.path, LOCK_NAME)
        self.what = what
        self.hint = hint
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> DirLock:
        """Take the lock without waiting; raise :class:`LockError` naming the directory and the holder's pid."""
        if self._fd is not None:
            return self
        if not os.path.isdir(self.path):
            raise LockError(f"cannot lock '{self.path}': it is not a directory (create it first)")
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = read_holder(self.path)
            who = f"pid {holder}" if holder is not None else "a process that is starting (pid not written yet)"
            raise LockError(
                f"'{self.path}' is in use by another ding {self.what} ({who}; lock file {self.lock_path}); "
                f"{self.hint}"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # closing releases the lock
            raise
        self._fd = fd
        _OWNED[os.path.realpath(self.path)] = self
        return self

    def release(self) -> None:
        """Empty the lock file and release it (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if _OWNED.get(os.path.realpath(self.path)) is self:
            del _OWNED[os.path.realpath(self.path)]
        try:
            os.ftruncate(fd, 0)  # while still held: the next holder writes its own pid after taking it
        finally:
            os.close(fd)  # releases the flock

    close = release

    def __enter__(self) -> DirLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"DirLock({self.path!r}, held={self.held})"


def read_holder(path: str) -> int | None:
    """The pid written in ``<path>/.lock`` (None when empty or unreadable). Only meaningful while the lock is held."""
    try:
        with open(os.path.join(path, LOCK_NAME), encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def is_held(path: str) -> bool:
    """Whether some process holds ``<path>/.lock`` now (a probe: takes and drops a shared lock without waiting)."""
    try:
        fd = os.open(os.path.join(path, LOCK_NAME), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(fd)  # closing drops the probe's shared lock, if it got one
    return False


def join_run_dir(path: str) -> None:
    """Let this process write ``path``, a run directory another process (the run's coordinator) holds: for the roles
    of a parallel run, which write their logs and checkpoints into the run's own directory."""
    _OWNED.setdefault(os.path.realpath(path), None)


def guard_run_dir(exp_name: str, who: str) -> None:
    """Before a worker writes under ``./<exp_name>/``: make sure the directory belongs to this process's run.

    A directory this process holds (a pipeline's run, :func:`ding.config.claim_run_dir`, a joined parallel run) is
    fine. A directory that does not exist yet is claimed and locked for the rest of the process, as a pipeline would
    (workers built by hand). A directory that another ding run holds or held (it has a ``.lock``) is refused with one
    :class:`LockError`: ding never writes into another run's files.
    """
    path = os.path.realpath(exp_name)
    if path in _OWNED:
        return
    if not os.path.isdir(path):
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        else:
            DirLock(path, what="run").acquire()  # held (and registered) until the process exits
            return
    if os.path.exists(os.path.join(path, LOCK_NAME)):
        holder = read_holder(path) if is_held(path) else None  # the pid stays in the file of a run that ended
        whose = f"a running ding process (pid {holder})" if holder is not None else "an earlier ding run"
        raise LockError(
            f"{who}: '{exp_name}' belongs to {whose} (lock file {os.path.join(exp_name, LOCK_NAME)}); ding never "
            "writes into another run's directory. Claim a new one for workers built by hand: "
            "`with ding.config.claim_run_dir(cfg.exp_name) as run: cfg.exp_name = run.path` (it takes "
            "<exp_name>_<YYMMDD_HHMMSS> when the name exists)"
        )
    DirLock(path, what="run").acquire()  # a directory made by hand, no ding run's: this process's run from now on
