"""Ready model templates, registered in ``MODEL_REGISTRY`` on import."""
from .q_learning import DQN

__all__ = ["DQN"]
