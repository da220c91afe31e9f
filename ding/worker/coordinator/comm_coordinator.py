"""DI-engine's import path, re-exported from :mod:`ding.parallel.coordinator.comm_coordinator`."""
from ding.parallel.coordinator.comm_coordinator import CommCoordinator

__all__ = ["CommCoordinator"]
