"""The collector role: its link to the coordinator (comm collectors) and the collectors that act (zergling, marine)."""
from ding.parallel.roles.collector.base_comm import BaseCommCollector, create_comm_collector
from ding.parallel.roles.collector.base_parallel import (
           BaseParallelCollector,
           create_parallel_collector,
           get_parallel_collector_cls,
)
from ding.parallel.roles.collector.flask_fs import FlaskFileSystemCollector, NaiveCollector
from ding.parallel.roles.collector.marine import MarineParallelCollector
from ding.parallel.roles.collector.zergling import ZerglingParallelCollector

__all__ = ["BaseCommCollector", "create_comm_collector", "FlaskFileSystemCollector", "NaiveCollector",
           "BaseParallelCollector", "create_parallel_collector", "get_parallel_collector_cls",
           "ZerglingParallelCollector", "MarineParallelCollector"]
