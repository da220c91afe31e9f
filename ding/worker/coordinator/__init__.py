"""Commanders and the parallel coordinator."""
from .base_parallel_commander import (
    BaseCommander,
    LimitedSpaceContainer,
    create_parallel_commander,
    get_parallel_commander_cls,
)
from .base_serial_commander import BaseSerialCommander, create_serial_commander
from .comm_coordinator import CommCoordinator
from .coordinator import Coordinator
from .one_vs_one_parallel_commander import OneVsOneCommander
from .solo_parallel_commander import SoloCommander

__all__ = [
    "BaseSerialCommander", "create_serial_commander", "BaseCommander", "LimitedSpaceContainer",
    "create_parallel_commander", "get_parallel_commander_cls", "SoloCommander", "OneVsOneCommander", "CommCoordinator",
    "Coordinator",
]
