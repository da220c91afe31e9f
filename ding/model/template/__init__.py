"""Ready model templates, registered in ``MODEL_REGISTRY`` on import."""
from .q_learning import DQN
from .qac import ContinuousQAC
from .vac import VAC

__all__ = ["DQN", "VAC", "ContinuousQAC"]
