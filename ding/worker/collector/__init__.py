"""Serial collectors, evaluators and episode callbacks; parallel mode's collectors, lazily."""
from ding.utils.lazy_names import lazy_names

from .base_serial_collector import (
    INF,
    BaseSerialCollector,
    ISerialCollector,
    create_serial_collector,
    get_serial_collector_cls,
    to_tensor_transitions,
)
from .base_serial_evaluator import (
    BaseSerialEvaluator,
    ISerialEvaluator,
    VectorEvalMonitor,
    create_serial_evaluator,
    get_serial_evaluator_cls,
)
from .battle_episode_serial_collector import BattleEpisodeSerialCollector
from .battle_interaction_serial_evaluator import BattleEvalInfo, BattleInteractionSerialEvaluator, PlayerEvalStats
from .battle_sample_serial_collector import BattleSampleSerialCollector
from .episode_callback import EpisodeCallback, build_episode_callbacks
from .episode_serial_collector import EpisodeSerialCollector
from .interaction_serial_evaluator import InteractionSerialEvaluator
from .metric_serial_evaluator import IMetric, MetricSerialEvaluator
from .sample_serial_collector import SampleSerialCollector

# (not in __all__; ``from ding.worker import *`` has them)
__getattr__ = lazy_names(__name__, {name: "ding.parallel.roles.collector" for name in (
    "BaseParallelCollector", "ZerglingParallelCollector", "MarineParallelCollector", "create_parallel_collector",
    "get_parallel_collector_cls", "BaseCommCollector", "FlaskFileSystemCollector", "NaiveCollector",
    "create_comm_collector")})

__all__ = [
    "INF", "ISerialCollector", "BaseSerialCollector", "SampleSerialCollector", "EpisodeSerialCollector",
    "create_serial_collector", "get_serial_collector_cls", "to_tensor_transitions", "EpisodeCallback",
    "build_episode_callbacks", "ISerialEvaluator", "BaseSerialEvaluator", "VectorEvalMonitor",
    "InteractionSerialEvaluator", "MetricSerialEvaluator", "IMetric", "create_serial_evaluator",
    "get_serial_evaluator_cls", "BattleSampleSerialCollector", "BattleEpisodeSerialCollector",
    "BattleInteractionSerialEvaluator", "BattleEvalInfo", "PlayerEvalStats",
]
