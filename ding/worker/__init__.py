"""Collectors, evaluators, the learner, replay buffers, the serial commander; parallel mode's names, lazily."""
from ding.utils.lazy_names import lazy_names

from . import collector, coordinator, learner, replay_buffer
from .collector import *  # noqa: F401,F403
from .coordinator import *  # noqa: F401,F403
from .learner import *  # noqa: F401,F403
from .replay_buffer import *  # noqa: F401,F403

_PARALLEL = {
    "ding.parallel.roles.collector": (
        "BaseParallelCollector", "ZerglingParallelCollector", "MarineParallelCollector", "create_parallel_collector",
        "get_parallel_collector_cls", "BaseCommCollector", "FlaskFileSystemCollector", "NaiveCollector",
        "create_comm_collector"),
    "ding.parallel.roles.learner": ("BaseCommLearner", "FlaskFileSystemLearner", "create_comm_learner"),
    "ding.parallel.commanders": (
        "BaseCommander", "LimitedSpaceContainer", "create_parallel_commander", "get_parallel_commander_cls",
        "SoloCommander", "OneVsOneCommander"),
    "ding.parallel.coordinator": ("CommCoordinator", "Coordinator"),
}
__getattr__ = lazy_names(__name__, {name: source for source, names in _PARALLEL.items() for name in names})

__all__ = [*collector.__all__, *coordinator.__all__, *learner.__all__, *replay_buffer.__all__,
           *(name for names in _PARALLEL.values() for name in names)]
