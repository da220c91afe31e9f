"""WakeUps: how the coordinator's threads wait for something to do.

Learner threads (and every thread before the first policy) wait on *progress*; idle collector threads wait for
*work*, and are woken one at a time: the woken thread wakes the next one when it finds a task, so wake-ups follow the
work there is instead of waking hundreds of collector threads at every event. A counter of wake-ups makes sure none
is lost between a thread looking for a task and starting to wait.
"""
from __future__ import annotations

import threading


class WakeUps:
    def __init__(self) -> None:
        self._progress = threading.Condition()
        self._work = threading.Condition()
        self._generation = 0

    @property
    def generation(self) -> int:
        """Read before looking for a task; pass to :meth:`wait_for_work` if none was found."""
        return self._generation

    def notify(self, everyone: bool = False) -> None:
        """Something changed: every progress waiter looks again, and so does one idle collector thread (every one
        with ``everyone``: the run ends)."""
        with self._progress:
            self._progress.notify_all()
        with self._work:
            self._generation += 1
            if everyone:
                self._work.notify_all()
            else:
                self._work.notify()

    def wake_collector(self) -> None:
        """One idle collector thread looks for a task (a thread that found one passes the wake-up on)."""
        with self._work:
            self._generation += 1
            self._work.notify()

    def wait_for_work(self, seen: int, timeout: float) -> None:
        """Wait to be woken, unless a wake-up came since ``seen`` (:attr:`generation` when the thread looked)."""
        with self._work:
            if self._generation == seen:
                self._work.wait(timeout)

    def wait_progress(self, timeout: float) -> None:
        with self._progress:
            self._progress.wait(timeout)
