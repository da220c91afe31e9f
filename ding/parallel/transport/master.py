"""The master side (the coordinator): connects slaves, sends them tasks, receives their reports and heartbeats; a
monitor thread fails tasks past their deadline and the tasks of slaves whose heartbeats stop (:class:`SlaveLost`)."""
from __future__ import annotations

import enum
import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ding.parallel.transport.base import (
    ApiError,
    InteractionError,
    JsonServer,
    PeerUnreachable,
    RequestRejected,
    SlaveLost,
    TaskFailed,
    TaskTimeout,
)
from ding.parallel.transport.client import HttpClient
from ding.parallel.transport.http_server import spawn

_task_counter = itertools.count()
_LOGGER = logging.getLogger("ding.parallel.transport")


def guarded(logger: logging.Logger, what: str, fn: Callable[..., None], *args: Any) -> None:
    """``fn(*args)``, its error logged as ``what`` failed: a bad callback or joiner must not break the master."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 -- logged, and the caller carries on
        logger.exception(f"{what} failed")


@enum.unique
class TaskStatus(enum.IntEnum):
    """DI-engine's task states; a :class:`TaskHandle` reads ``STARTED``, then ``COMPLETED`` or ``FAILED``."""

    IDLE = 0x00
    STARTING = 0x11
    STARTED = 0x12
    START_FAILED = 0x13
    COMPLETED = 0x21
    FAILED = 0x22


class TaskHandle:
    """A task sent to a slave: wait for its ``result()`` or attach callbacks run when it ends."""

    def __init__(self, task_id: str, name: str, slave: str, deadline_s: float) -> None:
        self.task_id, self.name, self.slave = task_id, name, slave
        self.deadline_s = float(deadline_s)
        self.deadline_at = time.monotonic() + self.deadline_s
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._result: dict[str, Any] = {}
        self.error: TaskFailed | None = None  # set when the task failed
        self._callbacks: list[Callable[[TaskHandle], None]] = []

    def done(self) -> bool:
        return self._event.is_set()

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        """The slave's answer; raises :class:`TaskFailed` (or a subclass) when the task failed."""
        if not self._event.wait(timeout):
            raise TaskTimeout(f"task {self.name} ({self.task_id}) on {self.slave}: no answer after waiting "
                              f"{timeout:g} s")
        if self.error is not None:
            raise self.error
        return self._result

    @property
    def status(self) -> TaskStatus:
        if not self._event.is_set():  # (the error is set before the event)
            return TaskStatus.STARTED
        return TaskStatus.FAILED if self.error is not None else TaskStatus.COMPLETED

    def add_done_callback(self, fn: Callable[[TaskHandle], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

    def _finish(self, result: dict[str, Any] | None = None, error: TaskFailed | None = None) -> bool:
        with self._lock:
            if self._event.is_set():
                return False
            self._result, self.error = (result or {}), error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            guarded(_LOGGER, f"callback of task {self.task_id}", fn, self)
        return True


class SlaveConnection:
    """The master's view of one connected slave."""

    def __init__(self, name: str, role: str, host: str, port: int, client: HttpClient) -> None:
        self.name, self.role, self.host, self.port, self.client = name, role, host, port, client
        self.last_seen = time.monotonic()
        self.alive = True
        self.resource: dict[str, Any] = {}
        self.tasks: dict[str, TaskHandle] = {}

    def __repr__(self) -> str:
        return f"SlaveConnection({self.name!r}, {self.role}, {self.host}:{self.port}, alive={self.alive})"


class Master:
    """HTTP master. ``on_slave_lost(conn, reason)`` is called once when a slave is declared lost; ``on_join(info)``
    when a slave announces itself (``{'name', 'role', 'host', 'port'}``): the owner decides whether to connect it."""

    def __init__(self, name: str = "coordinator", host: str = "127.0.0.1", port: int = 0, *, token: str,
                 advertise_host: str | None = None, heartbeat_timeout: float = 10.0,
                 logger: logging.Logger | None = None,
                 on_slave_lost: Callable[[SlaveConnection, str], None] | None = None,
                 on_join: Callable[[dict], None] | None = None) -> None:
        self.name = name
        self._token = token
        self._logger = logger or logging.getLogger(f"ding.parallel.transport.{name}")
        self.advertise_host = advertise_host or ("127.0.0.1" if host in ("0.0.0.0", "") else host)
        self.heartbeat_timeout = float(heartbeat_timeout)
        self.on_slave_lost = on_slave_lost
        self.on_join = on_join
        self._server = JsonServer(name, host, port, token, self._logger)
        for endpoint, fn in (("heartbeat", self._on_heartbeat), ("task/complete", self._on_report),
                             ("task/fail", functools.partial(self._on_report, failed=True)), ("join", self._on_join)):
            self._server.route(endpoint, fn)
        self._lock = threading.RLock()
        self._slaves: dict[str, SlaveConnection] = {}
        self._pending: dict[str, TaskHandle] = {}
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self._closed = False

    def start(self) -> None:
        self._server.start()
        self._monitor = spawn(self._watch, f"ding-{self.name}-monitor")

    @property
    def port(self) -> int:
        return self._server.port

    def close(self, disconnect: bool = True, reason: str = "master closing", shutdown: bool = True) -> None:
        """Disconnect every live slave (asking it to shut down), fail pending tasks, stop the server. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if disconnect:
            for conn in self.slaves():
                if conn.alive:
                    self.disconnect(conn, reason, shutdown=shutdown)
            if shutdown:
                self._shut_down_lost(reason)
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=5.0)
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()
        for handle in pending:
            handle._finish(error=TaskFailed(f"task {handle.name} ({handle.task_id}) abandoned: {reason}"))
        self._server.close()

    def refused_requests(self) -> int:
        """Requests the server refused for a missing or wrong token."""
        return int(self._server.refusals.counts.get("rejected request", 0))

    def connect(self, name: str, host: str, port: int, role: str | None = None) -> SlaveConnection:
        """Connect the slave at ``host:port`` (it learns where to send heartbeats and results)."""
        client = HttpClient(name, host, port, self._token)
        reply = client.post("connect", {"master_name": self.name, "master_host": self.advertise_host,
                                        "master_port": self.port, "heartbeat_timeout": self.heartbeat_timeout})
        real_name = str(reply.get("name", name))
        if real_name != name:
            raise InteractionError(f"{host}:{port} is slave '{real_name}', not the expected '{name}': check the "
                                   "hosts and ports in the system config")
        conn = SlaveConnection(name, str(reply.get("role", role or "")), host, int(port), client)
        conn.resource = dict(reply.get("resource", {}))
        if role is not None and conn.role != role:
            raise InteractionError(f"slave '{name}' at {host}:{port} is a {conn.role}, expected a {role}")
        with self._lock:
            old = self._slaves.get(name)
            self._slaves[name] = conn
        if old is not None and old.alive:
            self._lose(old, "replaced by a new connection of the same name")
        self._logger.info(f"connected {conn.role} '{name}' at {host}:{port}")
        return conn

    def disconnect(self, conn: SlaveConnection, reason: str, shutdown: bool = False) -> None:
        self._try(conn, "disconnect", {"reason": reason, "shutdown": shutdown}, 5.0, f"disconnect of '{conn.name}'")
        self._lose(conn, f"disconnected: {reason}", notify=False)

    def _try(self, conn: SlaveConnection, endpoint: str, body: dict, timeout: float, what: str = "") -> dict | None:
        """One short try of ``endpoint`` on ``conn``: its answer, or None (logged if ``what`` names the request)."""
        try:
            return conn.client.post(endpoint, body, timeout=timeout, retries=0)
        except (PeerUnreachable, RequestRejected) as e:
            if what:
                self._logger.info(f"{what} not acknowledged: {e}")
            return None

    def _shut_down_lost(self, reason: str) -> None:
        """Tell the slaves declared lost to shut down too (one only frozen or cut off for a while would otherwise
        live on until its ``master_lost_timeout``): best effort, all at once, one short try each."""
        threads = [spawn(self._try, f"ding-shutdown-{c.name}", c, "disconnect", {"reason": reason, "shutdown": True},
                         2.0) for c in self.slaves() if not c.alive]
        for t in threads:
            t.join(timeout=3.0)

    def slaves(self, role: str | None = None, alive_only: bool = False) -> list[SlaveConnection]:
        with self._lock:
            conns = list(self._slaves.values())
        return [c for c in conns if (role is None or c.role == role) and (c.alive or not alive_only)]

    def get_slave(self, name: str) -> SlaveConnection | None:
        with self._lock:
            return self._slaves.get(name)

    def new_task(self, conn: SlaveConnection, name: str, payload: Mapping[str, Any] | None = None,
                 deadline_s: float = 60.0) -> TaskHandle:
        """Send task ``name`` to ``conn``; the handle ends with the slave's report, a deadline or a lost slave."""
        task_id = f"{name}_{conn.name}_{next(_task_counter)}_{time.time_ns() % 10**9}"
        handle = TaskHandle(task_id, name, conn.name, deadline_s)
        if not conn.alive:
            handle._finish(error=SlaveLost(f"task {name} not sent: slave '{conn.name}' is lost"))
            return handle
        with self._lock:
            self._pending[task_id] = handle
            conn.tasks[task_id] = handle
        handle.add_done_callback(self._forget)
        try:
            conn.client.post("task/new", {"task_id": task_id, "name": name, "payload": dict(payload or {}),
                                          "deadline_s": deadline_s})
        except PeerUnreachable as e:
            self._lose(conn, f"unreachable: {e}")
        except RequestRejected as e:
            handle._finish(error=TaskFailed(f"slave '{conn.name}' refused task {name} ({task_id}): {e}"))
        return handle

    def cancel(self, conn: SlaveConnection, handle: TaskHandle) -> bool:
        """Tell the slave to stop ``handle``'s task (best effort); True if it was still running there."""
        if not conn.alive:
            return False
        reply = self._try(conn, "task/cancel", {"task_id": handle.task_id}, 5.0,
                          f"cancel of task {handle.task_id} on '{conn.name}'")
        return bool(reply and reply.get("cancelled"))

    def wait_idle(self, conn: SlaveConnection, timeout: float) -> bool:
        """Wait until the slave runs no task (a cancelled one has stopped); False at ``timeout`` or if it is lost."""
        deadline = time.monotonic() + timeout
        while conn.alive and not self._stop.is_set():
            reply = self._try(conn, "ping", {}, 5.0)
            if reply is not None and int(reply.get("running", 1)) == 0:
                return True
            if time.monotonic() > deadline:
                return False
            self._stop.wait(0.1)
        return False

    def _forget(self, handle: TaskHandle) -> None:
        with self._lock:
            self._pending.pop(handle.task_id, None)
            conn = self._slaves.get(handle.slave)
            if conn is not None:
                conn.tasks.pop(handle.task_id, None)

    def _known(self, payload: dict) -> SlaveConnection | None:
        name = payload.get("name")
        if not isinstance(name, str):
            raise ApiError(400, "missing 'name' (str): which slave is this?")
        with self._lock:
            conn = self._slaves.get(name)
        return conn if conn is not None and conn.alive else None

    def _on_heartbeat(self, payload: dict) -> dict:
        conn = self._known(payload)
        if conn is not None:
            conn.last_seen = time.monotonic()
        return {"known": conn is not None}

    def _on_report(self, payload: dict, failed: bool = False) -> dict:
        """``task/complete`` (its ``data``) or, ``failed``, ``task/fail`` (``message``, ``traceback``, ``data``)."""
        conn = self._known(payload)
        task_id = payload.get("task_id")
        if not isinstance(task_id, str):
            raise ApiError(400, "missing 'task_id' (str)")
        if conn is not None:
            conn.last_seen = time.monotonic()
        with self._lock:
            handle = self._pending.get(task_id)
        if handle is None or handle.slave != payload.get("name"):
            self._logger.info(f"late or unknown report for task {task_id} from {payload.get('name')!r} ignored")
            return {"accepted": False}
        data = payload.get("data", {})
        if not failed:
            return {"accepted": handle._finish(result=data if isinstance(data, dict) else {"value": data})}
        err = TaskFailed(f"task {handle.name} ({handle.task_id}) failed on '{handle.slave}': "
                         f"{payload.get('message', 'no message')}", str(payload.get("traceback", "")))
        err.result = dict(data) if isinstance(data, Mapping) else {}
        return {"accepted": handle._finish(error=err)}

    def _on_join(self, payload: dict) -> dict:
        info = {k: payload.get(k) for k in ("name", "role", "host", "port")}
        if not isinstance(info["name"], str) or not isinstance(info["port"], int) or not isinstance(info["host"], str):
            raise ApiError(400, "join needs 'name' (str), 'role' (str), 'host' (str) and 'port' (int)")
        if self.on_join is None:
            raise ApiError(403, f"{self.name} does not accept new slaves")
        self._logger.info(f"{info['role']} '{info['name']}' at {info['host']}:{info['port']} asks to join")
        spawn(guarded, "ding-join", self._logger, f"joining '{info['name']}'", self.on_join, info)
        return {"accepted": True}

    def _lose(self, conn: SlaveConnection, reason: str, notify: bool = True) -> None:
        with self._lock:
            if not conn.alive:
                return
            conn.alive = False
            tasks = list(conn.tasks.values())
        if notify:
            self._logger.warning(f"{conn.role} '{conn.name}' lost: {reason}")
        for handle in tasks:
            handle._finish(error=SlaveLost(f"task {handle.name} ({handle.task_id}): slave '{conn.name}' lost "
                                           f"({reason})"))
        if notify and self.on_slave_lost is not None:
            guarded(self._logger, f"on_slave_lost('{conn.name}')", self.on_slave_lost, conn, reason)

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            with self._lock:
                overdue = [h for h in self._pending.values() if now > h.deadline_at]
                silent = [c for c in self._slaves.values() if c.alive and now - c.last_seen > self.heartbeat_timeout]
            for handle in overdue:
                if handle._finish(error=TaskTimeout(f"task {handle.name} ({handle.task_id}) on '{handle.slave}' "
                                                    f"passed its deadline of {handle.deadline_s:g} s")):
                    self._logger.warning(f"task {handle.name} ({handle.task_id}) on '{handle.slave}' timed out")
            for conn in silent:
                self._lose(conn, f"no heartbeat for {now - conn.last_seen:.1f} s (heartbeat_timeout "
                                 f"{self.heartbeat_timeout:g} s)")
