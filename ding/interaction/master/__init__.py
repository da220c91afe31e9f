"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.master`."""
from ding.parallel.transport.master import Master, SlaveConnection, TaskHandle, TaskStatus

__all__ = ["TaskHandle", "SlaveConnection", "Master", "TaskStatus"]
