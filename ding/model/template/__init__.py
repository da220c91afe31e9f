"""Ready model templates, registered in ``MODEL_REGISTRY`` on import."""
from .maqac import MAQAC, ContinuousMAQAC
from .mavac import MAVAC
from .offline import QRDQN, ContinuousBC, DiscreteBC
from .q_learning import C51DQN, DQN, DRQN, RainbowDQN
from .qac import ContinuousQAC
from .qmix import QMix
from .vac import VAC

__all__ = ["DQN", "VAC", "ContinuousQAC", "C51DQN", "RainbowDQN", "DRQN", "DiscreteBC", "ContinuousBC", "QRDQN",
           "MAQAC", "ContinuousMAQAC", "MAVAC", "QMix"]
