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

    def __init__(self, type_: LockContextType = LockContextType.THREAD_LOCK) -> None:
        if type_ is LockContextType.THREAD_LOCK:
            self.lock: Any = threading.Lock()
        elif type_ is LockContextType.PROCESS_LOCK:
            self.lock = multiprocessing.Lock()
        else:
            raise ValueError(f"LockContext: type_ must be a LockContextType, got {type_!r}")
        self.type = type_

    def acquire(self) -> None:
        self.lock.acquire()

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> LockContext:
        self.lock.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()
