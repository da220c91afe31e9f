"""The serial commander; parallel mode's commanders and coordinator under their DI-engine names, lazily."""
from ding.utils.lazy_names import lazy_names

from .base_serial_commander import BaseSerialCommander, create_serial_commander

__getattr__ = lazy_names(__name__, {
    **{name: "ding.parallel.commanders" for name in (
        "BaseCommander", "LimitedSpaceContainer", "create_parallel_commander", "get_parallel_commander_cls",
        "SoloCommander", "OneVsOneCommander")},
    **{name: "ding.parallel.coordinator" for name in ("CommCoordinator", "Coordinator")}})

__all__ = [
    "BaseSerialCommander", "create_serial_commander",
]
