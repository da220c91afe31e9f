"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.collector`."""
from ding.parallel.roles.collector import (
    BaseCommCollector,
    FlaskFileSystemCollector,
    NaiveCollector,
    create_comm_collector,
)

__all__ = ["BaseCommCollector", "create_comm_collector", "FlaskFileSystemCollector", "NaiveCollector"]
