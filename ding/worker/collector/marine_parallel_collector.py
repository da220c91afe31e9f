"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.collector.marine`."""
from ding.parallel.roles.collector.marine import MarineParallelCollector, SeatPolicy, game_result, load_object

__all__ = ["SeatPolicy", "load_object", "game_result", "MarineParallelCollector"]
