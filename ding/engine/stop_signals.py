"""SIGTERM and SIGINT as a stop request that a loop polls, recorded by a handler that never takes a lock.

One mechanism for every process ding runs: a parallel role (:class:`StopSignals` as is) and a serial run
(:class:`ding.engine.training_view.GracefulStop`, which adds a message and "a second signal aborts").
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

_Stop = TypeVar("_Stop", bound="StopSignals")


class StopSignals:
    """SIGTERM and SIGINT as a request to stop, for a role's main loop to poll (:attr:`requested`).

    The handler only records the signal: it never takes a lock. Python runs a handler in the main thread between two
    bytecodes, possibly while that thread holds a lock (inside ``Event.set``, say); a second signal arriving there
    would wait forever on the lock its own thread holds. Repeated signals are the normal case for a role whose
    launcher is killed: each time one of the dying launcher's threads exits, Linux hands the role to the next thread
    and sends the parent-death signal again (seen: ten SIGTERMs within 60 ms, and a collector that hung for good in
    an ``Event.set`` inside its handler).

    ``interrupt`` (called in the handler, so it must not take a lock either): when it answers True at the first
    signal, the handler raises :class:`StoppedBySignal` into the main thread instead (a role still joining its
    coordinator, whose retries would otherwise run on). Later signals never raise. Outside the main thread the object
    installs nothing (Python delivers signals to the main thread only).
    """

    def __init__(self, interrupt: Callable[[], bool] | None = None) -> None:
        self.signum: int | None = None
        self.count = 0
        self._interrupt = interrupt
        self._old: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def __enter__(self: _Stop) -> _Stop:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.signum is not None:
            return
        self.signum = signum
        if self._interrupt is not None and self._interrupt():
            raise StoppedBySignal(signum)


class StoppedBySignal(BaseException):
    """Raised into the main thread by :class:`StopSignals` at the first signal, where its ``interrupt`` asked for it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
