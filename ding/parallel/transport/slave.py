"""The slave side (a learner or collector process): runs the master's tasks in worker threads and reports each
one's end; a master unreachable for ``master_lost_timeout`` seconds closes it instead of leaving it waiting forever."""
from __future__ import annotations

import collections
import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from ding.parallel.transport.base import ApiError, InteractionError, JsonServer, PeerUnreachable, RequestRejected
from ding.parallel.transport.client import HttpClient
from ding.parallel.transport.http_server import spawn
from ding.parallel.transport.responses import TaskFail

TaskFn = Callable[[dict], Mapping[str, Any] | None]

# A role's slave beats HEARTBEATS_PER_TIMEOUT times per the coordinator's heartbeat_timeout, and gives up on a
# coordinator it has not reached for MASTER_LOST_TIMEOUTS of them.
HEARTBEATS_PER_TIMEOUT = 10
MASTER_LOST_TIMEOUTS = 6
_SEEN_TASKS = 10000  # recent task ids kept, so that a retried task/new (within seconds) does not run twice
_MAX_WORKERS = 16  # task threads, started as tasks arrive while none is idle


def heartbeat_times(heartbeat_timeout: float) -> tuple[float, float]:
    """``(heartbeat_interval, master_lost_timeout)`` of a slave whose master loses it after ``heartbeat_timeout``."""
    return heartbeat_timeout / HEARTBEATS_PER_TIMEOUT, heartbeat_timeout * MASTER_LOST_TIMEOUTS


class Slave:
    """A task server: ``handlers`` maps task names (``'learner_learn_task'``) to ``fn(payload) -> dict``;
    ``on_connect(master_info)`` is called when a master connects."""

    def __init__(self, name: str, role: str, host: str = "127.0.0.1", port: int = 0, *, token: str,
                 handlers: Mapping[str, TaskFn] | None = None, advertise_host: str | None = None,
                 heartbeat_interval: float = 1.0, master_lost_timeout: float = 30.0, close_timeout: float = 5.0,
                 resource: Mapping[str, Any] | None = None, logger: logging.Logger | None = None,
                 on_connect: Callable[[dict], None] | None = None) -> None:
        self.name, self.role = name, role
        self._token = token
        self.advertise_host = advertise_host or ("127.0.0.1" if host in ("0.0.0.0", "") else host)
        self._logger = logger or logging.getLogger(f"ding.parallel.transport.{name}")
        self.handlers: dict[str, TaskFn] = dict(handlers or {})
        self.heartbeat_interval = float(heartbeat_interval)
        self.master_lost_timeout = float(master_lost_timeout)
        self.resource = dict(resource or {})
        self.on_connect = on_connect
        self._server = JsonServer(name, host, port, token, self._logger)
        for endpoint, fn in (("connect", self._on_connect), ("disconnect", self._on_disconnect),
                             ("task/new", self._on_task), ("task/cancel", self._on_cancel), ("ping", self._on_ping)):
            self._server.route(endpoint, fn)
        self._close_timeout = float(close_timeout)
        self._jobs: queue.Queue = queue.Queue()
        self._workers: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._master: HttpClient | None = None
        self._seen_tasks: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._running: set[str] = set()
        self._cancelled: set[str] = set()  # running tasks the master gave up on (their deadline passed)
        self._current = threading.local()  # the task id a worker thread runs
        self._closed = threading.Event()
        self._stopping = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._last_master_ok = time.monotonic()
        self._last_report_ok = -float("inf")  # when the master last accepted a task report (it counts as a heartbeat)
        self._contact = False  # joined or was connected once: from then on a missing master is a timeout
        self._said_dropped = False
        self.close_reason = ""

    def start(self) -> None:
        self._server.start()
        self._heartbeat = spawn(self._beat, f"ding-{self.name}-heartbeat")
        self._logger.info(f"{self.role} '{self.name}' listening on {self._server.host}:{self.port}")

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def connected(self) -> bool:
        return self._master is not None

    @property
    def stopping(self) -> bool:
        """True once the slave is closing: long-running task handlers should return soon."""
        return self._stopping.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the slave is closed; True if it is."""
        return self._closed.wait(timeout)

    def close(self, reason: str = "closed") -> None:
        """Stop accepting tasks, let running ones see ``stopping``, stop the server (idempotent)."""
        if self._stopping.is_set():
            self._closed.wait(10.0)
            return
        self.close_reason = reason
        self._stopping.set()
        self._server.close()
        for _ in self._workers:
            self._jobs.put(None)
        deadline = time.monotonic() + self._close_timeout
        for t in self._workers:  # a handler stuck for good is left behind (a daemon thread): the process can exit
            if t is not threading.current_thread():
                t.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(timeout=5.0)
        self._master = None
        self._logger.info(f"{self.role} '{self.name}' closed: {reason}")
        self._closed.set()

    def _close_soon(self, reason: str) -> None:
        """Close from a request or task thread (the server cannot be shut down from inside its own request)."""
        spawn(self.close, f"ding-{self.name}-close", reason)

    def join(self, master_host: str, master_port: int, contact: bool = True) -> None:
        """Ask the master at ``master_host:master_port`` to connect this slave. ``contact=False`` (a re-join): an
        accepted request does not count as contact with the master, only its connect does."""
        me = {"name": self.name, "role": self.role, "host": self.advertise_host, "port": self.port}
        HttpClient("master", master_host, master_port, self._token).post("join", me)
        if contact:
            self._last_master_ok = time.monotonic()
            self._contact = True

    def _on_ping(self, payload: dict) -> dict:
        return {"name": self.name, "role": self.role, "connected": self.connected, "running": len(self._running),
                "cancelled": len(self._cancelled)}

    def _on_connect(self, payload: dict) -> dict:
        host, port = payload.get("master_host"), payload.get("master_port")
        if not isinstance(host, str) or not isinstance(port, int):
            raise ApiError(400, "connect needs 'master_host' (str) and 'master_port' (int)")
        with self._lock:
            self._master = HttpClient(str(payload.get("master_name", "master")), host, port, self._token)
            self._last_master_ok = time.monotonic()
            self._contact = True
        self._logger.info(f"connected to master {payload.get('master_name')} at {host}:{port}")
        if self.on_connect is not None:
            self.on_connect(dict(payload))
        return {"name": self.name, "role": self.role, "resource": self.resource}

    def _on_disconnect(self, payload: dict) -> dict:
        reason = str(payload.get("reason", ""))
        with self._lock:
            self._master = None
            self._last_master_ok = time.monotonic()
        self._logger.info(f"disconnected by master: {reason}")
        if payload.get("shutdown"):
            self._close_soon(f"shut down by master: {reason}")
        return {}

    def _on_cancel(self, payload: dict) -> dict:
        task_id = payload.get("task_id")
        if not isinstance(task_id, str):
            raise ApiError(400, "task/cancel needs 'task_id' (str)")
        with self._lock:
            running = task_id in self._running
            if running:
                self._cancelled.add(task_id)
        if running:
            self._logger.warning(f"task {task_id} cancelled by the master (its deadline passed)")
        return {"cancelled": running}

    def task_cancelled(self) -> bool:
        """True inside a task handler whose task the master cancelled: stop, write nothing more, return soon."""
        task_id = getattr(self._current, "task_id", None)
        return task_id is not None and (task_id in self._cancelled or self._stopping.is_set())

    def _on_task(self, payload: dict) -> dict:
        task_id, name, body = payload.get("task_id"), payload.get("name"), payload.get("payload", {})
        if not isinstance(task_id, str) or not isinstance(name, str):
            raise ApiError(400, "task/new needs 'task_id' (str) and 'name' (str)")
        if self._stopping.is_set():
            raise ApiError(503, f"{self.name} is shutting down")
        if not self.connected:
            raise ApiError(409, f"{self.name} is not connected to a master; connect first")
        if name not in self.handlers:
            raise ApiError(400, f"{self.role} '{self.name}' has no task '{name}'; known tasks: "
                                f"{', '.join(sorted(self.handlers))}")
        if not isinstance(body, dict):
            raise ApiError(400, "'payload' must be a JSON object")
        with self._lock:
            if task_id in self._seen_tasks:  # a retried request: the task already runs
                return {"accepted": True, "duplicate": True}
            self._seen_tasks[task_id] = None
            if len(self._seen_tasks) > _SEEN_TASKS:
                self._seen_tasks.popitem(last=False)
            self._running.add(task_id)
            if self._idle == 0 and len(self._workers) < _MAX_WORKERS:  # no idle worker: start one
                self._workers.append(spawn(self._work, f"ding-{self.name}-task{len(self._workers)}"))
            self._jobs.put((task_id, name, body))
        return {"accepted": True}

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            job = self._jobs.get()
            with self._lock:
                self._idle -= 1
            if job is None:
                return
            self._run(*job)

    def _run(self, task_id: str, name: str, body: dict) -> None:
        self._current.task_id = task_id
        try:
            result = self.handlers[name](body)
            if task_id in self._cancelled:
                self._logger.info(f"cancelled task {name} ({task_id}) ended; its result is dropped")
            else:
                self._report("task/complete", {"task_id": task_id, "data": dict(result or {})})
        except TaskFail as e:  # DI-engine's way to fail a task with a result
            if task_id not in self._cancelled:
                self._report("task/fail", {"task_id": task_id, "message": str(e), "data": e.result})
        except Exception as e:  # noqa: BLE001 -- every failure goes back to the master with its traceback
            if task_id in self._cancelled:
                self._logger.info(f"cancelled task {name} ({task_id}) stopped: {type(e).__name__}: {e}")
            else:
                self._logger.exception(f"task {name} ({task_id}) failed")
                self._report("task/fail", {"task_id": task_id, "message": f"{type(e).__name__}: {e}",
                                           "traceback": traceback.format_exc()})
        finally:
            self._current.task_id = None
            with self._lock:
                self._running.discard(task_id)
                self._cancelled.discard(task_id)

    def _report(self, endpoint: str, body: dict) -> None:
        master = self._master
        if master is None:
            if not self._stopping.is_set():
                self._logger.warning(f"task {body['task_id']} ended but no master is connected to hear it")
            elif not self._said_dropped:  # the run is over: one quiet line, not one per task
                self._said_dropped = True
                self._logger.info("tasks that ended after the master closed the run are not reported")
            return
        try:
            reply = master.post(endpoint, {"name": self.name, **body})
            if reply.get("accepted"):  # the master knows this slave and has just marked it seen
                self._last_report_ok = self._last_master_ok = time.monotonic()
        except (PeerUnreachable, RequestRejected) as e:
            self._logger.warning(f"could not report task {body['task_id']} to the master: {e}")

    def _beat(self) -> None:
        unknown = 0
        while not self._stopping.wait(self.heartbeat_interval):
            if time.monotonic() - self._last_report_ok < self.heartbeat_interval:
                continue  # a report the master accepted within the interval said the same
            master = self._master
            if master is None and not self._contact:
                continue
            if master is None:
                problem = "no coordinator connection after joining or being disconnected (check the advertised address)"
            else:
                where = f"coordinator at {master.host}:{master.port}"
                try:
                    reply = master.post("heartbeat", {"name": self.name, "role": self.role,
                                                      "running": len(self._running)},
                                        timeout=max(2.0, self.heartbeat_interval * 2), retries=0)
                except PeerUnreachable as e:
                    problem = f"{where} unreachable ({e})"
                except RequestRejected as e:  # e.g. a coordinator restarted on this port with another token
                    problem = f"{where} answers with errors ({e})"
                    self._logger.warning(f"heartbeat rejected: {e}")
                else:
                    if reply.get("known", True):
                        self._last_master_ok = time.monotonic()
                        unknown = 0
                        continue
                    problem = f"{where} does not know this slave (and did not connect it again)"
                    unknown += 1
                    if unknown >= 2:  # the master forgot us (declared lost, or restarted): ask to be connected again
                        unknown = 0
                        try:
                            self.join(master.host, master.port, contact=False)
                        except InteractionError as e:
                            self._logger.warning(f"re-join failed: {e}")
            # only a heartbeat the master answers as ours counts: a master silent that long is gone for this slave
            silent = time.monotonic() - self._last_master_ok
            if silent > self.master_lost_timeout:
                self._logger.error(f"{problem}; no accepted heartbeat for {silent:.0f} s (limit "
                                   f"{self.master_lost_timeout:g} s, 6 x heartbeat_timeout): closing")
                self._close_soon("master lost")
                return
