"""DI-engine's import path, re-exported from :mod:`ding.parallel.commanders.base`."""
from ding.parallel.commanders.base import (
    BaseCommander,
    LimitedSpaceContainer,
    create_parallel_commander,
    get_parallel_commander_cls,
)

__all__ = ["LimitedSpaceContainer", "BaseCommander", "get_parallel_commander_cls", "create_parallel_commander"]
