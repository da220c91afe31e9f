"""Idle collector threads in the coordinator are woken one at a time (each passes the wake-up on when it finds a
task), not all at every event; a wake-up that comes between looking for a task and waiting is not lost."""
from __future__ import annotations

import threading
import time

import pytest

from ding.parallel.coordinator.run_context import WakeUps

pytestmark = pytest.mark.timeout(60)


def _woken_count(woken: list, n: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while len(woken) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # and no more than that
    return len(woken)


def test_an_event_wakes_one_idle_collector_thread_and_the_end_wakes_all():
    wake = WakeUps()
    woken: list[int] = []
    seen = wake.generation

    def idle(i: int) -> None:
        wake.wait_for_work(seen, 30.0)
        woken.append(i)

    threads = [threading.Thread(target=idle, args=(i,), daemon=True) for i in range(8)]
    try:
        for t in threads:
            t.start()
        time.sleep(0.3)  # all of them waiting
        wake.notify()
        assert _woken_count(woken, 1) == 1
        wake.wake_collector()  # the woken thread found a task: it wakes the next one
        assert _woken_count(woken, 2) == 2
        wake.notify(everyone=True)  # the run ends
        assert _woken_count(woken, 8) == 8
    finally:
        wake.notify(everyone=True)
        for t in threads:
            t.join(5)


def test_a_wake_up_between_looking_and_waiting_is_not_lost():
    wake = WakeUps()
    seen = wake.generation  # the thread looks for a task (none) ...
    wake.notify()  # ... an event comes before it waits
    t0 = time.monotonic()
    wake.wait_for_work(seen, 20.0)
    assert time.monotonic() - t0 < 10, "the thread waited although a wake-up came after it looked"


def test_progress_waiters_are_all_woken_by_an_event():
    wake = WakeUps()
    woken: list[int] = []

    def waiter(i: int) -> None:
        wake.wait_progress(30.0)
        woken.append(i)

    threads = [threading.Thread(target=waiter, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    wake.notify()
    assert _woken_count(woken, 3) == 3
    for t in threads:
        t.join(5)
