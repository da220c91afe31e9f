"""Neural network models: templates (DQN, ...), encoders, heads, and the config-driven factory."""
from .common import (
    ConvEncoder,
    DiscreteHead,
    DistributionHead,
    DuelingHead,
    EnsembleHead,
    FCEncoder,
    GaussianFourierProjectionTimeEncoder,
    IMPALAConvEncoder,
    NoisyLinear,
    RainbowHead,
    RegressionHead,
    ReparameterizationHead,
    StochasticDuelingHead,
    check_model_kwargs,
    create_model,
    hard_update,
    set_noise,
    soft_update,
)
from .template import (
    BDQ,
    C51DQN,
    DQN,
    DREAMERVAC,
    DRQN,
    FQF,
    IQN,
    MAQAC,
    MAVAC,
    QRDQN,
    VAC,
    ContinuousMAQAC,
    ContinuousQAC,
    DiscreteMAQAC,
    DiscreteQAC,
    GTrXLDQN,
    QMix,
    RainbowDQN,
    mavac,
)
from .wrapper import IModelWrapper, model_wrap, register_wrapper

__all__ = [
    "DQN", "VAC", "ContinuousQAC", "ConvEncoder", "DiscreteHead", "DuelingHead", "FCEncoder", "RegressionHead",
    "ReparameterizationHead", "check_model_kwargs", "create_model", "hard_update", "soft_update",
    "C51DQN", "DRQN", "DistributionHead", "NoisyLinear", "RainbowDQN", "RainbowHead", "set_noise",
    "EnsembleHead", "GaussianFourierProjectionTimeEncoder", "IMPALAConvEncoder", "StochasticDuelingHead",
]
__all__ += ["IModelWrapper", "model_wrap", "register_wrapper"]
__all__ += ["BDQ", "DREAMERVAC", "FQF", "IQN", "MAQAC", "MAVAC", "QRDQN", "ContinuousMAQAC", "DiscreteMAQAC",
            "DiscreteQAC", "GTrXLDQN", "QMix", "mavac"]
