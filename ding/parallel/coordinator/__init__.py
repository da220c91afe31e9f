"""The coordinator (one process of a parallel run) and its parts."""
from ding.parallel.coordinator.comm_coordinator import CommCoordinator
from ding.parallel.coordinator.coordinator import Coordinator

__all__ = ["CommCoordinator", "Coordinator"]
