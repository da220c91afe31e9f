"""CommCoordinator: the coordinator's HTTP master — which slaves exist, connecting them, noticing when they leave."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from ding.parallel.transport import InteractionError, Master, SlaveConnection


class CommCoordinator:
    """The slaves the config lists (``{name: [name, host, port]}``, DI-engine's layout) are connected at start, retried
    until ``startup_timeout``; any other slave joins by itself (how a collector started mid-run gets work)."""

    def __init__(self, cfg: Mapping, logger: logging.Logger, token: str, *,
                 on_new_slave: Callable[[SlaveConnection], None],
                 on_lost_slave: Callable[[SlaveConnection, str], None]) -> None:
        self._cfg = cfg
        self._on_new_slave = on_new_slave
        self._logger = logger
        self.master = Master(
            "coordinator", cfg.get("host", "127.0.0.1"), int(cfg.get("port") or 0), token=token,
            advertise_host=cfg.get("advertise_host"), heartbeat_timeout=float(cfg.get("heartbeat_timeout", 10.0)),
            logger=logger, on_slave_lost=on_lost_slave, on_join=self._join,
        )
        self._closed = threading.Event()
        self._lock = threading.Lock()  # guards _connecting only
        self._connecting: dict[str, threading.Lock] = {}  # one lock per slave name: its connects run one at a time

    def start(self) -> None:
        self.master.start()
        configured = [(role, name, str(host), int(port)) for role in ("learner", "collector")
                      for name, (_, host, port) in dict(self._cfg.get(role) or {}).items()
                      if port not in (None, 0, "auto")]
        if configured:
            threading.Thread(target=self._connect_configured, args=(configured,), name="ding-connect",
                             daemon=True).start()

    def _connect_configured(self, pending: list[tuple[str, str, str, int]]) -> None:
        deadline = time.monotonic() + float(self._cfg.get("startup_timeout", 120))
        while pending and not self._closed.is_set():
            for item in list(pending):
                role, name, host, port = item
                try:
                    self._connect_once(role, name, host, port)
                except InteractionError as e:
                    if time.monotonic() <= deadline:
                        continue
                    self._logger.error(f"gave up connecting {role} '{name}' at {host}:{port}: {e}")
                pending.remove(item)
            if pending:
                self._closed.wait(0.5)

    def _join(self, info: dict) -> None:
        if self._closed.is_set():
            return
        role = info.get("role")
        if role not in ("learner", "collector"):
            self._logger.warning(f"'{info['name']}' asked to join as {role!r}; only learners and collectors join")
            return
        self._connect_once(role, info["name"], info["host"], info["port"])

    def _connect_once(self, role: str, name: str, host: str, port: int) -> None:
        """Connect a slave unless connected at that address already; one name's connects run one at a time, different
        slaves' side by side (a joiner slow to answer must not hold up the others)."""
        with self._lock:
            lock = self._connecting.setdefault(name, threading.Lock())
        with lock:
            conn = self.master.get_slave(name)
            if conn is not None and conn.alive and conn.host == host and conn.port == int(port):
                return
            conn = self.master.connect(name, host, port, role=role)
        self._on_new_slave(conn)

    def close(self, reason: str = "run finished") -> None:
        self._closed.set()
        self.master.close(disconnect=True, reason=reason, shutdown=True)
