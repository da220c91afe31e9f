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
