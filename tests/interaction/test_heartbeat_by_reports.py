"""A slave whose task reports the master accepts sends no heartbeats meanwhile (a report tells the master the same),
stays alive to the master past its heartbeat deadline, and heartbeats again once it is idle."""
from __future__ import annotations

import threading
import time

import pytest

from ding.parallel.transport import Master, Slave

TOKEN = "h" * 32
pytestmark = pytest.mark.timeout(60)


def test_a_busy_slave_sends_no_heartbeats_and_an_idle_one_does():
    master = Master("coordinator", token=TOKEN, heartbeat_timeout=1.0)
    beats: list[float] = []
    on_heartbeat = master._server._handlers["heartbeat"]

    def counted(payload: dict) -> dict:
        beats.append(time.monotonic())
        return on_heartbeat(payload)

    master._server.route("heartbeat", counted)
    slave = Slave("collector0", "collector", token=TOKEN, heartbeat_interval=0.2,
                  handlers={"work": lambda payload: {"ok": True}})
    lost: list[str] = []
    master.on_slave_lost = lambda conn, reason: lost.append(reason)
    busy = threading.Event()
    try:
        master.start()
        slave.start()
        conn = master.connect("collector0", "127.0.0.1", slave.port)
        busy.set()
        t0 = time.monotonic()
        done = 0
        while time.monotonic() - t0 < 3.0:  # 3 heartbeat deadlines of tasks, one every 50 ms
            master.new_task(conn, "work", {}, deadline_s=10).result(timeout=10)
            done += 1
            time.sleep(0.05)
        busy_beats = [t for t in beats if t0 + 0.3 < t < t0 + 3.0]
        assert done >= 10 and not lost and conn.alive, (done, lost)
        assert len(busy_beats) <= 2, f"{len(busy_beats)} heartbeats while reports came every 50 ms"
        t1 = time.monotonic()
        time.sleep(1.5)  # idle: heartbeats resume and keep it alive
        assert len([t for t in beats if t > t1]) >= 3 and conn.alive and not lost
    finally:
        slave.close()
        master.close(disconnect=False)
