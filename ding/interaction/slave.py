"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.slave` and ``responses``."""
from ding.parallel.transport.responses import TaskFail
from ding.parallel.transport.slave import Slave

__all__ = ["Slave", "TaskFail"]
