"""Models of the offline algorithms under DI-engine's names: ``discrete_bc``, ``continuous_bc`` and ``qrdqn``."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, one_of
from ding.utils import MODEL_REGISTRY

from ..common import RegressionHead, ReparameterizationHead, discrete_head, mlp
from ..common.quantile_head import QRDQNHead
from .q_learning import DQN, as_shape, build_encoder


@MODEL_REGISTRY.register("discrete_bc")
class DiscreteBC(DQN):
    """DI-engine's discrete BC network: the DQN template, its ``logit`` read as action logits."""


@MODEL_REGISTRY.register("continuous_bc")
class ContinuousBC(nn.Module):
    """An actor for continuous BC: ``'regression'`` -> ``{'action'}`` in (-1, 1); ``'reparameterization'`` ->
    ``{'logit': [mu, sigma]}`` of a Gaussian (clamped to [-1, 1] when acting)."""

    config_ranges = {"action_space": one_of("regression", "reparameterization"),
                     "actor_head_hidden_size": at_least(1, integer=True),
                     "actor_head_layer_num": at_least(0, integer=True)}

    def __init__(self, obs_shape: int | Sequence[int], action_shape: int | Sequence[int],
                 action_space: str = "regression", actor_head_hidden_size: int = 64, actor_head_layer_num: int = 1,
                 activation: nn.Module | None = None, norm_type: str | None = None) -> None:
        super().__init__()
        obs, act = as_shape(obs_shape, "ContinuousBC obs_shape"), as_shape(action_shape, "ContinuousBC action_shape")
        self.obs_shape, self.action_shape, self.action_space = obs, act[0], action_space
        head: nn.Module
        if action_space == "regression":
            head = RegressionHead(actor_head_hidden_size, act[0], actor_head_layer_num, final_tanh=True,
                                  activation=activation, norm_type=norm_type)
        else:
            head = ReparameterizationHead(actor_head_hidden_size, act[0], actor_head_layer_num,
                                          sigma_type="conditioned", activation=activation, norm_type=norm_type)
        self.actor = nn.Sequential(mlp(obs[0], [actor_head_hidden_size], activation, norm_type), head)

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        out = self.actor(obs)
        if self.action_space == "regression":
            return {"action": out["pred"]}
        return {"logit": [out["mu"], out["sigma"]]}


@MODEL_REGISTRY.register("qrdqn")
class QRDQN(nn.Module):
    """Quantile-regression Q-network: ``forward(obs) -> {'logit': (B, A) mean Q, 'q': (B, A, num_quantiles),
    'tau': (B, num_quantiles, 1) the quantile midpoints}`` (a multi-discrete ``action_shape`` gives each as a list,
    one entry per action dimension)."""

    config_ranges = {**DQN.config_ranges, "num_quantiles": at_least(1, integer=True)}

    def __init__(self, obs_shape: int | Sequence[int], action_shape: int | Sequence[int],
                 encoder_hidden_size_list: Sequence[int] | None = None, head_hidden_size: int | None = None,
                 head_layer_num: int = 1, num_quantiles: int = 32, activation: nn.Module | None = None,
                 norm_type: str | None = None) -> None:
        super().__init__()
        self.obs_shape = as_shape(obs_shape, "QRDQN obs_shape")
        action = as_shape(action_shape, "QRDQN action_shape")
        self.action_shape: int | tuple[int, ...] = action[0] if len(action) == 1 else action
        self.num_quantiles = int(num_quantiles)
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        self.head = discrete_head(QRDQNHead, head_hidden_size or self.encoder.output_size, action,
                                  layer_num=head_layer_num, num_quantiles=self.num_quantiles, activation=activation,
                                  norm_type=norm_type, input_size=self.encoder.output_size)

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        return self.head(self.encoder(x))
