"""What the learner's and the collector's comm classes share: the HTTP slave that runs each task's typed handler, and
joining the coordinator."""
from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from ding.parallel.protocol import ProtocolError, Record, decode_task
from ding.parallel.transport import PeerUnreachable, Slave, resolve_token
from ding.parallel.transport.slave import heartbeat_times

# Config keys every comm role has (see docs/parallel.md).
COMM_ROLE_CONFIG = dict(
    host="127.0.0.1",  # address the role's HTTP server binds
    port=0,  # 0: a free port (the role then joins the coordinator at coordinator_host:coordinator_port)
    advertise_host=None,  # address the coordinator uses to reach this role (default: host)
    coordinator_host=None,  # where to join; None: wait for the coordinator to connect this role
    coordinator_port=None,
    auth_token=None,  # shared secret; None: the DING_AUTH_TOKEN environment variable
    heartbeat_timeout=10.0,  # the coordinator's: beat every tenth of it, exit after 6 x it without the coordinator
    path_data=None,  # the run's shared directories; when set, a task naming other ones is refused (None: any)
    path_policy=None,
)

Handler = Callable[[Any], Record]


class RoleSlave(Slave):
    """The slave of a comm role: ``handlers`` maps task record types to ``fn(task) -> answer record``; a malformed task
    fails with a :class:`ProtocolError` naming the field. ``token`` wins over ``cfg.auth_token`` and the environment."""

    def __init__(self, cfg: Mapping[str, Any], name: str, role: str, token: str | None,
                 handlers: Mapping[type[Record], Handler], resource: Mapping[str, Any],
                 logger: logging.Logger) -> None:
        self._typed: dict[type[Record], Handler] = dict(handlers)
        wire = {cls.TASK.value: functools.partial(self._on_wire_task, cls.TASK.value)  # type: ignore[attr-defined]
                for cls in self._typed}
        interval, lost = heartbeat_times(float(cfg["heartbeat_timeout"]))
        super().__init__(name, role, cfg["host"], int(cfg["port"] or 0),
                         token=resolve_token(token or cfg.get("auth_token"), where=f"{name}: system_config.auth_token"),
                         advertise_host=cfg.get("advertise_host"), heartbeat_interval=interval,
                         master_lost_timeout=lost, resource=resource, logger=logger, handlers=wire)

    def _on_wire_task(self, name: str, payload: dict) -> dict:
        task = decode_task(name, payload)
        handler = self._typed.get(type(task))
        if handler is None:  # e.g. an EvalTask (same task name as CollectTask) for a role that only collects
            raise ProtocolError(type(task).__name__, "(task)", f"{self.role} '{self.name}' runs no such task",
                                "the coordinator")
        return handler(task).to_json()


def join_coordinator(slave: Slave, host: str, port: int) -> None:
    """Join the coordinator at ``host:port``, retrying while nothing answers (it may still be starting) for at most
    ``master_lost_timeout`` seconds; a refusal (a wrong token) raises :class:`RequestRejected` at once."""
    deadline = time.monotonic() + slave.master_lost_timeout
    while True:
        try:
            slave.join(host, port)
            return
        except PeerUnreachable as e:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PeerUnreachable(
                    f"{slave.role} '{slave.name}': no coordinator answers at {host}:{port} ({_why(e)}; tried for "
                    f"{slave.master_lost_timeout:g} s, 6 x coordinator.heartbeat_timeout). Check --coordinator-host/"
                    "--coordinator-port (or system_config.coordinator.host/port), that the coordinator runs, and "
                    "that this host can reach that address") from None
            time.sleep(min(1.0, left))


def _why(e: Exception) -> str:
    text = str(e).lower()
    for known in ("Connection refused", "timed out", "Name or service not known", "No route to host",
                  "Network is unreachable", "Temporary failure in name resolution"):
        if known.lower() in text:
            return known.lower()
    return type(e.__cause__ or e).__name__


class SlaveBacked:
    """Mixin of a comm role served by ``self._slave``: start it, joining the coordinator when its address is known
    (the coordinator ignores a join of a role it already connected)."""

    _slave: Slave
    _cfg: Any

    def start(self) -> None:
        super().start()  # type: ignore[misc]
        self._slave.start()
        host, port = self._cfg.get("coordinator_host"), self._cfg.get("coordinator_port")
        if host and port:
            join_coordinator(self._slave, str(host), int(port))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the slave closes (the coordinator ended the run, or it is gone); True if it did."""
        return self._slave.wait(timeout)

    @property
    def slave(self) -> Slave:
        return self._slave
