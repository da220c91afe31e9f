"""Master/slave messaging over real loopback HTTP: envelope, auth, bad bodies, task lifecycle, deadlines, heartbeats."""
from __future__ import annotations

import pickle
import threading
import time

import pytest
import requests

from ding.parallel.transport import (
    TOKEN_HEADER,
    InteractionError,
    JsonServer,
    Master,
    RequestRejected,
    Slave,
    SlaveLost,
    TaskFailed,
    TaskTimeout,
    resolve_token,
)
from ding.utils import ConfigError

TOKEN = "t" * 32


@pytest.fixture
def pair():
    """A started master and a started, connected slave with a few task handlers."""
    release = threading.Event()

    def echo(p):
        return {"echo": p}

    def boom(p):
        raise ValueError("exploded on purpose")

    def block(p):
        release.wait(10)
        return {}

    master = Master("coordinator", token=TOKEN, heartbeat_timeout=1.0)
    slave = Slave("collector0", "collector", token=TOKEN, handlers={"echo": echo, "boom": boom, "block": block},
                  heartbeat_interval=0.1)
    master.start()
    slave.start()
    conn = master.connect("collector0", "127.0.0.1", slave.port, role="collector")
    yield master, slave, conn
    release.set()
    master.close()
    slave.close()


def _post(port, endpoint, body, token=TOKEN, content_type="application/json"):
    headers = {"Content-Type": content_type}
    if token is not None:
        headers[TOKEN_HEADER] = token
    return requests.post(f"http://127.0.0.1:{port}/api/v1/{endpoint}", data=body, headers=headers, timeout=5)


def test_task_completes_with_result(pair):
    master, slave, conn = pair
    handle = master.new_task(conn, "echo", {"x": [1, 2.5, "a"]}, deadline_s=5)
    assert handle.result(timeout=5) == {"echo": {"x": [1, 2.5, "a"]}}
    assert handle.done()


def test_failing_task_reports_traceback(pair):
    master, slave, conn = pair
    handle = master.new_task(conn, "boom", {}, deadline_s=5)
    with pytest.raises(TaskFailed, match="exploded on purpose") as info:
        handle.result(timeout=5)
    assert "ValueError" in info.value.remote_traceback and "def boom" not in info.value.remote_traceback
    assert "in boom" in info.value.remote_traceback


def test_unknown_task_name_is_refused(pair):
    master, slave, conn = pair
    handle = master.new_task(conn, "no_such_task", {}, deadline_s=5)
    with pytest.raises(TaskFailed, match="no task 'no_such_task'.*known tasks: block, boom, echo"):
        handle.result(timeout=5)


def test_deadline_fails_a_task_that_never_answers(pair):
    master, slave, conn = pair
    t0 = time.monotonic()
    handle = master.new_task(conn, "block", {}, deadline_s=0.3)
    with pytest.raises(TaskTimeout, match="passed its deadline"):
        handle.result(timeout=5)
    assert time.monotonic() - t0 < 2.0


def test_request_without_token_gets_401_and_runs_nothing(pair):
    master, slave, conn = pair
    calls = []
    slave.handlers["count"] = lambda p: calls.append(p) or {}
    body = '{"task_id": "x1", "name": "count", "payload": {}}'
    for token in (None, "wrong" * 8):
        r = _post(slave.port, "task/new", body, token=token)
        assert r.status_code == 401
        assert r.json()["success"] is False and r.json()["code"] == 401
    time.sleep(0.2)
    assert calls == []
    r = _post(master.port, "heartbeat", '{"name": "collector0"}', token=None)
    assert r.status_code == 401


def test_pickle_and_malformed_json_get_400_and_server_keeps_serving(pair):
    master, slave, conn = pair
    for body in (pickle.dumps({"task_id": "x", "name": "echo"}), b"{not json", b"[1, 2]", b"\xff\xfe"):
        r = _post(slave.port, "task/new", body, content_type="application/octet-stream")
        assert r.status_code == 400, body
        assert r.json()["success"] is False
    handle = master.new_task(conn, "echo", {"still": "alive"}, deadline_s=5)
    assert handle.result(timeout=5)["echo"] == {"still": "alive"}


def test_slave_without_heartbeats_is_lost_and_its_tasks_fail(pair):
    master, slave, conn = pair
    lost = []
    master.on_slave_lost = lambda c, reason: lost.append((c.name, reason))
    handle = master.new_task(conn, "block", {}, deadline_s=30)
    slave._stopping.set()  # heartbeats stop as if the process froze
    with pytest.raises(SlaveLost, match="collector0"):
        handle.result(timeout=5)
    assert lost and lost[0][0] == "collector0" and "no heartbeat" in lost[0][1]
    assert not conn.alive
    slave._stopping.clear()


def test_join_connects_a_new_slave(pair):
    master, slave, conn = pair
    joined = threading.Event()

    def on_join(info):
        master.connect(info["name"], info["host"], info["port"], role=info["role"])
        joined.set()

    master.on_join = on_join
    extra = Slave("collector1", "collector", token=TOKEN, handlers={"echo": lambda p: {"from": "collector1"}})
    extra.start()
    try:
        extra.join("127.0.0.1", master.port)
        assert joined.wait(5)
        conn1 = master.get_slave("collector1")
        assert conn1 is not None and conn1.alive
        assert master.new_task(conn1, "echo", {}, deadline_s=5).result(timeout=5) == {"from": "collector1"}
    finally:
        extra.close()


def test_disconnect_with_shutdown_closes_the_slave(pair):
    master, slave, conn = pair
    master.disconnect(conn, "run finished", shutdown=True)
    assert slave.wait(5)
    assert "run finished" in slave.close_reason


def test_slave_closes_itself_when_the_master_is_gone():
    master = Master("coordinator", token=TOKEN)
    slave = Slave("learner0", "learner", token=TOKEN, heartbeat_interval=0.05, master_lost_timeout=0.5)
    master.start()
    slave.start()
    try:
        master.connect("learner0", "127.0.0.1", slave.port)
        master.close(disconnect=False)
        assert slave.wait(5)
        assert slave.close_reason == "master lost"
    finally:
        slave.close()
        master.close()


def test_port_in_use_is_a_clear_error():
    first = JsonServer("a", "127.0.0.1", 0, TOKEN)
    first.start()
    try:
        second = JsonServer("b", "127.0.0.1", first.port, TOKEN)
        with pytest.raises(InteractionError, match=f"cannot listen on 127.0.0.1:{first.port}.*choose another port"):
            second.start()
    finally:
        first.close()


def test_close_releases_the_port():
    server = JsonServer("a", "127.0.0.1", 0, TOKEN)
    server.start()
    port = server.port
    server.close()
    server.close()  # idempotent
    again = JsonServer("b", "127.0.0.1", port, TOKEN)
    again.start()
    again.close()


def test_unknown_endpoint_and_get_answer_with_an_envelope(pair):
    master, slave, conn = pair
    r = _post(slave.port, "nope", "{}")
    assert r.status_code == 404 and "unknown endpoint" in r.json()["message"]
    r = requests.get(f"http://127.0.0.1:{slave.port}/api/v1/ping", headers={TOKEN_HEADER: TOKEN}, timeout=5)
    assert r.status_code == 405 and r.json()["success"] is False


def test_rejected_request_is_not_retried(pair):
    master, slave, conn = pair
    conn.client.retries = 5
    t0 = time.monotonic()
    with pytest.raises(RequestRejected, match="409|400"):
        conn.client.post("task/new", {"task_id": 3})
    assert time.monotonic() - t0 < 0.5


def test_resolve_token(monkeypatch):
    monkeypatch.delenv("DING_AUTH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="needs a shared secret.*DING_AUTH_TOKEN"):
        resolve_token(None)
    with pytest.raises(ConfigError, match="16-character|at least 16"):
        resolve_token("short")
    monkeypatch.setenv("DING_AUTH_TOKEN", "e" * 20)
    assert resolve_token(None) == "e" * 20
    assert resolve_token("c" * 16) == "c" * 16


def test_close_does_not_wait_forever_for_a_stuck_task():
    master = Master("coordinator", token=TOKEN)
    stuck = threading.Event()
    slave = Slave("learner0", "learner", token=TOKEN, close_timeout=0.2, handlers={"hang": lambda p: stuck.wait(60)})
    master.start()
    slave.start()
    try:
        conn = master.connect("learner0", "127.0.0.1", slave.port)
        master.new_task(conn, "hang", {}, deadline_s=30)
        time.sleep(0.2)
        t0 = time.monotonic()
        slave.close()
        assert time.monotonic() - t0 < 3.0 and slave.wait(0)
    finally:
        stuck.set()
        master.close()


def test_slave_that_joined_but_is_never_connected_gives_up():
    master = Master("coordinator", token=TOKEN)
    master.on_join = lambda info: None  # accepts the join, never connects back (e.g. a wrong advertise_host)
    slave = Slave("collector3", "collector", token=TOKEN, heartbeat_interval=0.05, master_lost_timeout=0.5)
    master.start()
    slave.start()
    try:
        slave.join("127.0.0.1", master.port)
        assert slave.wait(5)
        assert slave.close_reason == "master lost"
    finally:
        slave.close()
        master.close()


def _read_request(conn) -> bytes:
    """One whole HTTP request from ``conn`` (headers, then Content-Length bytes of body), however it is segmented."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_an_answer_cut_off_by_a_dying_peer_is_unreachable_not_a_crash():
    # a peer killed while sending its answer: the chunked body ends early (http.client: IncompleteRead). The
    # client retries, then reports the peer unreachable -- what the coordinator handles as a lost slave.
    import socket

    from ding.parallel.transport import HttpClient, PeerUnreachable

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    server.settimeout(0.1)
    served = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:  # (the accept timeout: look at the stop flag again)
                continue
            _read_request(conn)  # all of it: closing with unread bytes would reset the connection instead
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"49\r\n{\"success\": true")  # 73 bytes announced, 16 sent, then the peer is gone
            conn.close()
            served.append(1)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    client = HttpClient("dying", "127.0.0.1", port, "t" * 32, timeout=5.0, retries=2, backoff=0.01)
    try:
        with pytest.raises(PeerUnreachable, match="cannot reach dying .*IncompleteRead"):
            client.post("task")
        assert len(served) == 3  # the first attempt and two retries
    finally:
        client.close()
        stop.set()
        t.join(timeout=5)
        server.close()
