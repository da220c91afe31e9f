"""Ready model templates, registered in ``MODEL_REGISTRY`` on import."""
from .bdq import BDQ
from .gtrxl_dqn import GTrXLDQN
from .maqac import MAQAC
from .mavac import MAVAC
from .offline import QRDQN, ContinuousBC, DiscreteBC
from .q_learning import C51DQN, DQN, DRQN, RainbowDQN
from .qac import ContinuousQAC
from .qmix import QMix
from .quantile_q import FQF, IQN
from .vac import VAC

__all__ = ["DQN", "VAC", "ContinuousQAC", "C51DQN", "RainbowDQN", "DRQN", "DiscreteBC", "ContinuousBC", "QRDQN",
           "MAQAC", "MAVAC", "QMix", "IQN", "FQF", "BDQ", "GTrXLDQN"]
