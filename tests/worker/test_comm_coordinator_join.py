"""Joins at the coordinator's master: a joiner that is slow to answer its connect does not hold up another slave's
join, and two joins of one name still make one connection."""
from __future__ import annotations

import logging
import threading
import time

import pytest
from easydict import EasyDict

from ding.parallel.coordinator.comm_coordinator import CommCoordinator
from ding.parallel.transport import Master, Slave

pytestmark = pytest.mark.timeout(60)
TOKEN = "j" * 32


def _comm(connected: list) -> CommCoordinator:
    cfg = EasyDict(host="127.0.0.1", port=0, heartbeat_timeout=10.0)
    return CommCoordinator(cfg, logging.getLogger("test-join"), TOKEN, on_new_slave=connected.append,
                           on_lost_slave=lambda conn, reason: None)


def test_a_slow_joiner_does_not_hold_up_the_join_of_another_slave(monkeypatch):
    connected: list = []
    comm = _comm(connected)
    release = threading.Event()
    real_connect = Master.connect

    def connect(self, name, host, port, role=None):
        if name == "slow":  # e.g. an address that drops packets: each connect attempt waits out its timeout
            release.wait(30)
            raise ConnectionError("slow joiner gave up")
        return real_connect(self, name, host, port, role=role)

    monkeypatch.setattr(Master, "connect", connect)
    fast = Slave("fast", "collector", token=TOKEN, heartbeat_interval=0.2)
    comm.start()
    fast.start()
    try:
        slow_join = threading.Thread(target=lambda: pytest.raises(ConnectionError, comm._join, dict(
            name="slow", role="collector", host="127.0.0.1", port=9)), daemon=True)
        slow_join.start()
        time.sleep(0.2)  # the slow joiner is inside its connect
        t0 = time.monotonic()
        comm._join(dict(name="fast", role="collector", host="127.0.0.1", port=fast.port))
        took = time.monotonic() - t0
        assert [c.name for c in connected] == ["fast"] and fast.connected
        assert slow_join.is_alive(), "the slow joiner should still be connecting"
        assert took < 10, f"the join of 'fast' waited {took:.1f} s behind the slow joiner"
    finally:
        release.set()
        slow_join.join(10)
        comm.close()
        fast.close()


def test_two_joins_of_one_slave_make_one_connection():
    connected: list = []
    comm = _comm(connected)
    slave = Slave("collector0", "collector", token=TOKEN, heartbeat_interval=0.2)
    comm.start()
    slave.start()
    try:
        info = dict(name="collector0", role="collector", host="127.0.0.1", port=slave.port)
        joins = [threading.Thread(target=comm._join, args=(info,)) for _ in range(4)]
        for t in joins:
            t.start()
        for t in joins:
            t.join(20)
        assert len(connected) == 1 and connected[0].alive
    finally:
        comm.close()
        slave.close()
