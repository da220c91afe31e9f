"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.collector.base_parallel`."""
from ding.parallel.roles.collector.base_parallel import (
    BaseParallelCollector,
    create_parallel_collector,
    get_parallel_collector_cls,
    samples_one_by_one,
)

__all__ = ["BaseParallelCollector", "get_parallel_collector_cls", "create_parallel_collector", "samples_one_by_one"]
