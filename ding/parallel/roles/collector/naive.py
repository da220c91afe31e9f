"""NaiveCollector: the collector process's HTTP slave (the seed's name for it)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ding.parallel.protocol import Record
from ding.parallel.roles.role import Handler, RoleSlave


class NaiveCollector(RoleSlave):
    """A slave whose master is the coordinator; it carries messages between its comm collector and the coordinator.

    ``_process_task(task)`` runs a checked task record (``CollectorStartTask``, ``CollectTask``, ``EvalTask``,
    ``CollectorCloseTask``) with the handler the comm collector registered for its type and returns the answer record;
    ``_get_timestep()`` is how many env steps the collector has taken so far (``timestep()`` of the comm collector),
    which the slave's ``ping`` answer carries for an operator to see.
    """

    def __init__(self, cfg: Mapping[str, Any], name: str, token: str | None, handlers: Mapping[type[Record], Handler],
                 resource: Mapping[str, Any], logger: logging.Logger, timestep: Callable[[], int]) -> None:
        self._timestep = timestep
        super().__init__(cfg, name, "collector", token, handlers, resource, logger)

    def _get_timestep(self) -> int:
        return int(self._timestep())

    def _on_ping(self, payload: dict) -> dict:
        return dict(super()._on_ping(payload), timestep=self._get_timestep())
