"""What every parallel-mode role process does about itself: its name in ``ps``, dying with its launcher, asking for
batch scheduling, and (collectors) yielding the CPU to the learner.

``ding -m parallel`` puts its own pid under :data:`PARENT_PID_ENV` in each child's environment; the role
(``ding -m dist --module ...``) calls :func:`die_with_parent` at its start.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

PARENT_PID_ENV = "DING_PARENT_PID"
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def set_process_name(name: str) -> None:
    """Name the process for ``ps -o comm`` / ``top`` (Linux; at most 15 characters are kept)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent() -> None:
    """If ``DING_PARENT_PID`` names our launcher, get SIGTERM when it dies (Linux), and exit if it is gone already."""
    parent = os.environ.get(PARENT_PID_ENV)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != int(parent):
        raise SystemExit(f"ding: the launcher (pid {parent}) is gone; exiting")


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

    def __enter__(self) -> StopSignals:
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


def prefer_batch_scheduling() -> bool:
    """Ask Linux to schedule this process as batch work (``SCHED_BATCH``, at the same nice value); threads started
    afterwards inherit it. A role's threads wake each other all the time (a learn task's thread when its batches are
    trained, the policy writer, HTTP workers); a thread woken under the normal policy may preempt the one that woke it,
    which then waits for the CPU while it still holds the GIL, so nothing in the process runs. Batch threads do not
    preempt on wake-up. Profiled in a learner on a busy 2-core machine (py-spy --gil): waking other threads took 14%
    of the training thread's GIL time before, 4% after. False where the policy is not available (not Linux) or
    refused."""
    if not hasattr(os, "sched_setscheduler") or not hasattr(os, "SCHED_BATCH"):
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except OSError:
        return False
    return True


def lower_priority(increment: int) -> bool:
    """Lower this process's CPU priority by ``increment`` nice steps (0: leave it), before any thread starts: threads
    inherit it. A collector does this so that the learner and the coordinator on the same host get the CPU first: the
    learner is the one consumer every collector feeds, and time it waits for a CPU is lost to the whole run, while
    collection the learner cannot use yet is not worth having (the commander paces it anyway). Where Linux groups
    processes by session for scheduling (``autogroup``; a role runs in its own session), the nice value alone would
    compare the collector only with itself, so the session's group gets the same increment. False where the OS has
    no nice values or refused."""
    if increment <= 0 or not hasattr(os, "nice"):
        return False
    try:
        os.nice(increment)
    except OSError:
        return False
    try:  # the session's scheduling group (Linux with autogroup); absent or not writable elsewhere: nothing to do
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(min(19, increment)))
    except OSError:
        pass
    return True
