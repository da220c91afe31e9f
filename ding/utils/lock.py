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
        return self

    def release(self) -> None:
        """Empty the lock file and release it (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
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
