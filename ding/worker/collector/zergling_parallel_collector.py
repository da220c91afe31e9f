"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.collector.zergling`."""
from ding.parallel.roles.collector.zergling import ZerglingParallelCollector, compress_enabled

__all__ = ["compress_enabled", "ZerglingParallelCollector"]
