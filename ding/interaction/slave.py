"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.slave`."""
from ding.parallel.transport.slave import (
    Slave,
)

__all__ = [
    "Slave",
]
