"""Encoders, heads, layer helpers, model factory and target-network updates."""
from .encoder import ConvEncoder, FCEncoder
from .head import DiscreteHead, DuelingHead, RegressionHead, ReparameterizationHead
from .nn_module import build_normalization, fc_block, mlp
from .target import hard_update, soft_update
from .utils import check_model_kwargs, create_model

__all__ = [
    "ConvEncoder", "DiscreteHead", "DuelingHead", "FCEncoder", "RegressionHead", "ReparameterizationHead",
    "build_normalization", "check_model_kwargs", "create_model", "fc_block", "hard_update", "mlp", "soft_update",
]
