"""DI-engine's ``LockContext``: a thread or process lock used as a context manager."""
from __future__ import annotations

import enum
import multiprocessing
import threading
from typing import Any


class LockContextType(enum.Enum):
    THREAD_LOCK = 1  # threading.Lock: threads of one process
    PROCESS_LOCK = 2  # multiprocessing.Lock: processes forked from the creator


class LockContext:
    """``with LockContext(LockContextType.THREAD_LOCK): ...``; ``acquire()`` / ``release()`` also work."""

    def __init__(self, lock_type: LockContextType = LockContextType.THREAD_LOCK) -> None:
        if lock_type is LockContextType.THREAD_LOCK:
            self.lock: Any = threading.Lock()
        elif lock_type is LockContextType.PROCESS_LOCK:
            self.lock = multiprocessing.Lock()
        else:
            raise ValueError(f"LockContext: lock_type must be a LockContextType, got {lock_type!r}")
        self.type = lock_type

    def acquire(self) -> None:
        self.lock.acquire()

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> LockContext:
        self.lock.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()


class FileRWLock:
    """A reader-writer lock between processes on ``path`` (an advisory ``flock`` of ``path + '.lock'``): ``'read'``
    takes it shared (many readers at once), ``'write'`` exclusive. Use as a context manager; POSIX only."""

    def __init__(self, path: str, mode: str) -> None:
        if mode not in ("read", "write"):
            raise ValueError(f"get_rw_file_lock({path!r}): mode must be 'read' or 'write', got {mode!r}")
        self.lock_path, self.mode = f"{path}.lock", mode
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl
        import os

        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if self.mode == "read" else fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        import fcntl
        import os

        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> FileRWLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def get_rw_file_lock(path: str, mode: str) -> FileRWLock:
    """DI-engine's name: a :class:`FileRWLock` on ``path`` for ``mode`` ``'read'`` or ``'write'``."""
    return FileRWLock(path, mode)
