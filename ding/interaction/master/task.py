"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.master`."""
from ding.parallel.transport.master import TaskHandle, TaskStatus

__all__ = ["TaskStatus", "TaskHandle"]
