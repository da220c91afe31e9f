"""Encoders, heads, layer helpers, model factory and target-network updates."""
from .encoder import (
    NATURE_CNN_SIZES,
    ConvEncoder,
    FCEncoder,
    GaussianFourierProjectionTimeEncoder,
    IMPALAConvEncoder,
    NatureCNN,
    ResFCBlock,
)
from .head import (
    DiscreteHead,
    DistributionHead,
    DuelingHead,
    EnsembleHead,
    MultiHead,
    RainbowHead,
    RegressionHead,
    ReparameterizationHead,
    StochasticDuelingHead,
    discrete_head,
)
from .nn_module import NoisyLinear, build_normalization, fc_block, mlp, set_noise
from .target import hard_update, soft_update
from .utils import check_model_kwargs, create_model

__all__ = [
    "ConvEncoder", "DiscreteHead", "DuelingHead", "FCEncoder", "RegressionHead", "ReparameterizationHead",
    "build_normalization", "check_model_kwargs", "create_model", "fc_block", "hard_update", "mlp", "soft_update",
    "DistributionHead", "NoisyLinear", "RainbowHead", "set_noise", "NatureCNN", "NATURE_CNN_SIZES",
    "MultiHead", "discrete_head", "StochasticDuelingHead", "EnsembleHead", "IMPALAConvEncoder",
    "GaussianFourierProjectionTimeEncoder", "ResFCBlock",
]
