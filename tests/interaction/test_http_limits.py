"""Bounded HTTP servers (fault class 4 of issue 16): idle and half-open connections cannot starve real requests or get
slaves declared lost, slow senders are cut off, and refusals do not grow the log without bound."""
from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time

import pytest
import requests

from ding.parallel.transport import TOKEN_HEADER, JsonServer, Master, Slave
from ding.parallel.transport.http_server import ServerLimits

TOKEN = "h" * 32
pytestmark = pytest.mark.timeout(120)


@contextlib.contextmanager
def idle_connections(port: int, n: int):
    """``n`` connections to 127.0.0.1:``port`` that never send a byte; all closed on the way out."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.settimeout(5.0)
            s.connect(("127.0.0.1", port))
        yield socks
    finally:
        for s in socks:
            s.close()


def _closed_by_server(s: socket.socket) -> bool:
    s.settimeout(0.0)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_tasks_flow_while_1100_idle_connections_sit_on_both_servers():
    master = Master("coordinator", token=TOKEN, heartbeat_timeout=2.0)
    slave = Slave("collector0", "collector", token=TOKEN, handlers={"echo": lambda p: {"echo": p}},
                  heartbeat_interval=0.2)
    try:
        master.start()
        slave.start()
        conn = master.connect("collector0", "127.0.0.1", slave.port, role="collector")
        threads_before = threading.active_count()
        with idle_connections(master.port, 1100), idle_connections(slave.port, 1100):
            time.sleep(0.5)
            # werkzeug's server would now run a thread per connection (2,200 of them)
            assert threading.active_count() - threads_before < 50
            t0 = time.monotonic()
            for i in range(20):
                assert master.new_task(conn, "echo", {"i": i}, deadline_s=10).result(timeout=10) == {"echo": {"i": i}}
            time.sleep(3.0)  # longer than heartbeat_timeout: the slave's heartbeats must keep getting through
            assert conn.alive, "the slave was declared lost while idle connections sat on the servers"
            assert master.new_task(conn, "echo", {}, deadline_s=10).result(timeout=10) == {"echo": {}}
            elapsed = time.monotonic() - t0
        assert elapsed < 60
        for server in (master._server, slave._server):  # the oldest idle connections were closed to stay bounded
            assert server.refusals.counts.get("connection closed unserved", 0) >= 1100 - 256
    finally:
        slave.close()
        master.close()


def test_idle_and_slow_connections_are_closed_and_real_requests_still_served(caplog):
    limits = ServerLimits(max_workers=2, max_connections=50, idle_timeout=0.5, read_timeout=0.5, log_interval=60.0)
    server = JsonServer("srv", "127.0.0.1", 0, TOKEN, logger=logging.getLogger("test.srv"), limits=limits)
    server.route("ping", lambda p: {"pong": True})
    server.start()
    url = f"http://127.0.0.1:{server.port}/api/v1/ping"
    try:
        # two slow senders (a partial request line) would hold both workers of werkzeug's server for good
        slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
        for s in slow:
            s.sendall(b"POST /api/v1/ping HTTP/1.1\r\nHost: x\r\n")
        with idle_connections(server.port, 100) as socks:
            time.sleep(0.2)
            assert sum(_closed_by_server(s) for s in socks[:50]) == 50  # over max_connections: oldest closed
            r = requests.post(url, json={}, headers={TOKEN_HEADER: TOKEN}, timeout=5)
            assert r.status_code == 200 and r.json()["data"] == {"pong": True}
            time.sleep(1.5)
            assert all(_closed_by_server(s) for s in socks)  # idle past idle_timeout
            assert all(_closed_by_server(s) for s in slow)  # cut after read_timeout
            r = requests.post(url, json={}, headers={TOKEN_HEADER: TOKEN}, timeout=5)
            assert r.status_code == 200
        for s in slow:
            s.close()
        counts = server.refusals.counts
        assert counts["connection closed unserved"] >= 50
        assert counts["connection closed unserved"] + counts["idle connection closed"] >= 100
        # the slow senders never completed their request head: closed by the loop, no worker held
        assert counts["connection closed unserved"] + counts["idle connection closed"] >= 102
    finally:
        server.close()


def test_rejected_requests_are_counted_not_logged_one_line_each(caplog):
    server = JsonServer("srv", "127.0.0.1", 0, TOKEN, logger=logging.getLogger("test.srv2"))
    server.route("ping", lambda p: {"pong": True})
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/api/v1/ping"
        with caplog.at_level(logging.WARNING, logger="test.srv2"):
            for _ in range(200):
                assert requests.post(url, json={}, headers={TOKEN_HEADER: "wrong"}, timeout=5).status_code == 401
            with socket.create_connection(("127.0.0.1", server.port)) as s:  # garbage instead of HTTP
                s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
                s.settimeout(5.0)
                s.recv(4096)
        assert server.refusals.counts["rejected request"] == 200
        lines = [r.getMessage() for r in caplog.records if r.name == "test.srv2"]
        assert len([m for m in lines if "rejected request" in m]) == 1, lines
        assert "missing or wrong token" in lines[0] and "logged at most once per 60 s" in lines[0]
        assert len(lines) <= 3
        assert requests.post(url, json={}, headers={TOKEN_HEADER: TOKEN}, timeout=5).status_code == 200
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="test.srv2"):
            server.close()
        assert any("199 more rejected request events" in r.getMessage() for r in caplog.records)
    finally:
        server.close()


def test_close_is_prompt_with_a_request_in_service_and_idle_connections():
    release = threading.Event()
    server = JsonServer("srv", "127.0.0.1", 0, TOKEN, logger=logging.getLogger("test.srv3"))
    server.route("block", lambda p: release.wait(30) and {})
    server.start()
    url = f"http://127.0.0.1:{server.port}/api/v1/block"
    caller = threading.Thread(target=lambda: _swallow(lambda: requests.post(
        url, json={}, headers={TOKEN_HEADER: TOKEN}, timeout=30)), daemon=True)
    try:
        with idle_connections(server.port, 20):
            caller.start()
            time.sleep(0.3)
            t0 = time.monotonic()
            release.set()
            server.close()
            assert time.monotonic() - t0 < 10
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
    finally:
        release.set()
        server.close()
        caller.join(10)


def _swallow(fn):
    try:
        fn()
    except requests.RequestException:
        pass


def test_slow_drip_connections_without_the_token_do_not_starve_authenticated_requests():
    """Issue 36, item 6: 40 connections dripping a request head one byte at a time (more than the 32 workers) used to
    hold every worker, each read within its timeout: an authenticated request then waited almost a minute. The whole
    head must now arrive within idle_timeout, and only a head with the token takes a worker."""
    server = JsonServer("srv", "127.0.0.1", 0, TOKEN, logger=logging.getLogger("test.drip"))
    server.route("ping", lambda p: {"pong": True})
    server.start()
    stop = threading.Event()
    drips = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(40)]

    def drip() -> None:
        head = b"POST /api/v1/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n" + b"X-Pad: " + b"a" * 200
        for i in range(len(head)):
            for s in drips:
                try:
                    s.send(head[i:i + 1])
                except OSError:
                    pass
            if stop.wait(1.0):
                return

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        time.sleep(2.5)  # every dripping connection has sent a few bytes: each would hold a worker
        url = f"http://127.0.0.1:{server.port}/api/v1/ping"
        t0 = time.monotonic()
        r = requests.post(url, json={}, headers={TOKEN_HEADER: TOKEN}, timeout=30)
        took = time.monotonic() - t0
        assert r.status_code == 200 and r.json()["data"] == {"pong": True}
        assert took < 5.0, f"an authenticated request took {took:.1f} s behind 40 slow-drip connections"
        time.sleep(server.limits.idle_timeout + 1.0 - 2.5)
        assert all(_closed_by_server(s) for s in drips)  # no whole head within idle_timeout: closed
        assert server.refusals.counts.get("idle connection closed", 0) >= 40
    finally:
        stop.set()
        dripper.join(timeout=5)
        for s in drips:
            s.close()
        server.close()


def test_flask_static_route_is_gone():
    """Issue 36, item 11: Flask's default /static/<path> route answered without the token."""
    server = JsonServer("srv", "127.0.0.1", 0, TOKEN, logger=logging.getLogger("test.static"))
    try:
        assert not [r.rule for r in server.app.url_map.iter_rules() if r.rule.startswith("/static")]
        server.start()
        r = requests.get(f"http://127.0.0.1:{server.port}/static/x", timeout=5)
        assert r.status_code == 401
    finally:
        server.close()
