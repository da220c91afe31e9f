"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.collector.base_comm`."""
from ding.parallel.roles.collector.base_comm import BaseCommCollector, create_comm_collector

__all__ = ["BaseCommCollector", "create_comm_collector"]
