"""Neural network models: templates (DQN, ...), encoders, heads, and the config-driven factory."""
from .common import (
    ConvEncoder,
    DiscreteHead,
    DuelingHead,
    FCEncoder,
    RegressionHead,
    ReparameterizationHead,
    check_model_kwargs,
    create_model,
    hard_update,
    soft_update,
)
from .template import DQN, VAC, ContinuousQAC

__all__ = [
    "DQN", "VAC", "ContinuousQAC", "ConvEncoder", "DiscreteHead", "DuelingHead", "FCEncoder", "RegressionHead",
    "ReparameterizationHead", "check_model_kwargs", "create_model", "hard_update", "soft_update",
]
