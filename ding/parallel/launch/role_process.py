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

from ding.utils.process_helper import set_process_name

__all__ = ["PARENT_PID_ENV", "set_process_name", "die_with_parent", "prefer_batch_scheduling", "lower_priority"]

PARENT_PID_ENV = "DING_PARENT_PID"
_PR_SET_PDEATHSIG = 1


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
