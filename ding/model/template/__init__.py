"""Ready model templates, registered in ``MODEL_REGISTRY`` on import."""
from . import mavac
from .bdq import BDQ
from .discrete_qac import DiscreteQAC
from .dreamer_vac import DREAMERVAC
from .gtrxl_dqn import GTrXLDQN
from .maqac import MAQAC, ContinuousMAQAC, DiscreteMAQAC
from .mavac import MAVAC
from .offline import QRDQN, ContinuousBC, DiscreteBC
from .q_learning import C51DQN, DQN, DRQN, RainbowDQN
from .qac import ContinuousQAC
from .qmix import Mixer, QMix
from .quantile_q import FQF, IQN
from .vac import VAC

__all__ = ["DQN", "VAC", "ContinuousQAC", "C51DQN", "RainbowDQN", "DRQN", "DiscreteBC", "ContinuousBC", "QRDQN",
           "MAQAC", "MAVAC", "QMix", "IQN", "FQF", "BDQ", "GTrXLDQN",
           "DiscreteMAQAC", "ContinuousMAQAC", "DiscreteQAC", "DREAMERVAC", "Mixer"]
