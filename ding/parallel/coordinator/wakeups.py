"""WakeUps: how the coordinator's threads wait for something to do.

Learner threads wait on *progress*. Idle collector threads wait for *work* and are woken one at a time (a woken thread
that finds a task wakes the next), not hundreds at every event; ``generation`` counts the wake-ups so that none is
lost between a thread looking for a task and starting to wait.
"""
from __future__ import annotations

import threading


class WakeUps:
    def __init__(self) -> None:
        self._progress = threading.Condition()
        self._work = threading.Condition()
        self.generation = 0  # read before looking for a task; pass to wait_for_work if none was found

    def notify(self, everyone: bool = False) -> None:
        """Something changed: every progress waiter looks again, and so does one idle collector thread (each one with
        ``everyone``: the run ends)."""
        with self._progress:
            self._progress.notify_all()
        with self._work:
            self.generation += 1
            if everyone:
                self._work.notify_all()
            else:
                self._work.notify()

    def wake_collector(self) -> None:
        """One idle collector thread looks for a task."""
        with self._work:
            self.generation += 1
            self._work.notify()

    def wait_for_work(self, seen: int, timeout: float) -> None:
        """Wait to be woken, unless a wake-up came since ``seen`` (the generation when the thread looked)."""
        with self._work:
            if self.generation == seen:
                self._work.wait(timeout)

    def wait_progress(self, timeout: float) -> None:
        with self._progress:
            self._progress.wait(timeout)
