"""DI-engine's model wrappers (``model_wrap``, ``register_wrapper``)."""
from .model_wrappers import (
    WRAPPERS,
    ActionNoiseWrapper,
    ArgmaxSampleWrapper,
    BaseModelWrapper,
    DeterministicSampleWrapper,
    EpsGreedyMultinomialSampleWrapper,
    EpsGreedySampleWrapper,
    GaussianNoise,
    HiddenStateWrapper,
    IModelWrapper,
    MultinomialSampleWrapper,
    OUNoise,
    ReparamSampleWrapper,
    TargetNetworkWrapper,
    model_wrap,
    register_wrapper,
)

__all__ = [
    "WRAPPERS", "ActionNoiseWrapper", "ArgmaxSampleWrapper", "BaseModelWrapper", "DeterministicSampleWrapper",
    "EpsGreedyMultinomialSampleWrapper", "EpsGreedySampleWrapper", "GaussianNoise", "HiddenStateWrapper",
    "IModelWrapper", "MultinomialSampleWrapper", "OUNoise", "ReparamSampleWrapper", "TargetNetworkWrapper",
    "model_wrap", "register_wrapper",
]
