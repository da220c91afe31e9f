"""DI-engine's import path, re-exported from :mod:`ding.parallel.coordinator.coordinator`."""
from ding.parallel.coordinator.coordinator import Coordinator

__all__ = ["Coordinator"]
