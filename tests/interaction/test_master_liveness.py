"""A slave whose master answers, but not as its master (a coordinator restarted on the same port with another token,
or one that forgot the slave and will not connect it again), closes after ``master_lost_timeout`` like a slave whose
master is unreachable -- it never lives on forever."""
from __future__ import annotations

import time

import pytest

from ding.parallel.transport import Master, Slave

TOKEN = "t" * 32
pytestmark = pytest.mark.timeout(60)


def _connected_pair():
    master = Master("coordinator", token=TOKEN)
    slave = Slave("learner0", "learner", token=TOKEN, heartbeat_interval=0.05, master_lost_timeout=1.0)
    master.start()
    slave.start()
    master.connect("learner0", "127.0.0.1", slave.port)
    return master, slave


def _restart_on_same_port(master: Master, token: str, on_join=None) -> Master:
    port = master.port
    master.close(disconnect=False)
    new = Master("coordinator", port=port, token=token, on_join=on_join)
    new.start()
    return new


def test_master_restarted_with_another_token_makes_the_slave_close():
    master, slave = _connected_pair()
    new = None
    try:
        new = _restart_on_same_port(master, "x" * 32)  # every heartbeat now gets 401
        t0 = time.monotonic()
        assert slave.wait(10), "the slave kept running beside a master that rejects it"
        assert slave.close_reason == "master lost"
        assert time.monotonic() - t0 < 5
    finally:
        slave.close()
        master.close()
        if new is not None:
            new.close()


def test_master_that_forgot_the_slave_and_refuses_its_rejoin_makes_the_slave_close():
    master, slave = _connected_pair()
    new = None
    try:
        new = _restart_on_same_port(master, TOKEN)  # same token, no on_join: "unknown" heartbeats, join refused
        assert slave.wait(10), "the slave kept running beside a master that does not know it"
        assert slave.close_reason == "master lost"
    finally:
        slave.close()
        master.close()
        if new is not None:
            new.close()


def test_master_that_forgot_the_slave_connects_it_again_and_the_slave_stays():
    master, slave = _connected_pair()
    new = None
    try:
        reconnected = []

        def on_join(info):
            reconnected.append(new.connect(info["name"], info["host"], info["port"], role=info["role"]))

        new = _restart_on_same_port(master, TOKEN, on_join=lambda info: on_join(info))
        deadline = time.monotonic() + 5
        while not reconnected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reconnected, "the slave did not ask to be connected again"
        assert not slave.wait(2.0), "a slave its master connected again must keep running"
    finally:
        slave.close()
        master.close()
        if new is not None:
            new.close()


def test_a_slave_declared_lost_is_told_to_shut_down_when_the_master_closes():
    """A slave that was only frozen or cut off (declared lost, then back) ends with the run, not at its own
    master_lost_timeout: the launcher waits for every role to exit."""
    master = Master("coordinator", token=TOKEN)
    lost = Slave("collector0", "collector", token=TOKEN, heartbeat_interval=0.05, master_lost_timeout=30.0)
    dead = Slave("collector1", "collector", token=TOKEN, heartbeat_interval=0.05, master_lost_timeout=30.0)
    try:
        master.start()
        for s in (lost, dead):
            s.start()
            master.connect(s.name, "127.0.0.1", s.port)
        dead.close()  # gone for good
        for name in ("collector0", "collector1"):
            conn = master.get_slave(name)
            assert conn is not None
            master._lose(conn, "no heartbeat (test)")
        assert not lost.wait(0.5), "the lost slave closed before the master did"
        master.close(reason="run finished")  # the dead one costs one refused connection
        assert lost.wait(5), "the slave declared lost was not told to shut down when the master closed"
        assert "shut down by master" in str(lost.close_reason)
    finally:
        lost.close()
        dead.close()
        master.close()
