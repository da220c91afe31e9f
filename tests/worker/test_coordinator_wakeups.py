"""Idle collector threads in the coordinator are woken one at a time (each passes the wake-up on when it finds a
task), not all at every event; a wake-up that comes between looking for a task and waiting is not lost."""
from __future__ import annotations

import threading
import time

import pytest

from ding.worker import Coordinator

from .test_coordinator import TOKEN, _cfg

pytestmark = pytest.mark.timeout(60)


def _woken_count(woken: list, n: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while len(woken) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # and no more than that
    return len(woken)


def test_an_event_wakes_one_idle_collector_thread_and_the_end_wakes_all(in_tmp_dir):
    coordinator = Coordinator(_cfg(exp="wake"), token=TOKEN)
    woken: list[int] = []
    seen = coordinator._work_gen

    def idle(i: int) -> None:
        coordinator._wait_for_work(seen, 30.0)
        woken.append(i)

    threads = [threading.Thread(target=idle, args=(i,), daemon=True) for i in range(8)]
    try:
        for t in threads:
            t.start()
        time.sleep(0.3)  # all of them waiting
        coordinator._notify()
        assert _woken_count(woken, 1) == 1
        coordinator._wake_collector()  # the woken thread found a task: it wakes the next one
        assert _woken_count(woken, 2) == 2
        coordinator._notify(everyone=True)  # the run ends
        assert _woken_count(woken, 8) == 8
    finally:
        coordinator._notify(everyone=True)
        coordinator.close()


def test_a_wake_up_between_looking_and_waiting_is_not_lost(in_tmp_dir):
    coordinator = Coordinator(_cfg(exp="nolost"), token=TOKEN)
    try:
        seen = coordinator._work_gen  # the thread looks for a task (none) ...
        coordinator._notify()  # ... an event comes before it waits
        t0 = time.monotonic()
        coordinator._wait_for_work(seen, 20.0)
        assert time.monotonic() - t0 < 10, "the thread waited although a wake-up came after it looked"
    finally:
        coordinator.close()
