"""Quantile Q-networks with learned fractions: IQN (fractions sampled per call) and FQF (fractions proposed by the
network). Their heads are in :mod:`ding.model.common.quantile_head`; QR-DQN (fixed fractions) is in ``offline.py``."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least
from ding.utils import MODEL_REGISTRY

from ..common import discrete_head
from ..common.quantile_head import FQFHead, QuantileHead
from .q_learning import DQN, as_shape, build_encoder


class _QuantileQ(nn.Module):
    """Encoder + one quantile head (``head_cls``), or a :class:`~ding.model.common.MultiHead` of them for a
    multi-discrete ``action_shape`` (each output then a list, one entry per action dimension)."""

    head_cls: type[nn.Module]
    config_ranges = {**DQN.config_ranges, "num_quantiles": at_least(1, integer=True),
                     "quantile_embedding_size": at_least(1, integer=True)}

    def __init__(self, obs_shape: int | Sequence[int], action_shape: int | Sequence[int],
                 encoder_hidden_size_list: Sequence[int] | None = None, head_hidden_size: int | None = None,
                 head_layer_num: int = 1, num_quantiles: int = 32, quantile_embedding_size: int = 128,
                 activation: nn.Module | None = None, norm_type: str | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        self.obs_shape = as_shape(obs_shape, f"{name} obs_shape")
        action = as_shape(action_shape, f"{name} action_shape")
        self.action_shape: int | tuple[int, ...] = action[0] if len(action) == 1 else action
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        self.head = discrete_head(self.head_cls, head_hidden_size or self.encoder.output_size, action,
                                  layer_num=head_layer_num, num_quantiles=num_quantiles,
                                  quantile_embedding_size=quantile_embedding_size, activation=activation,
                                  norm_type=norm_type, input_size=self.encoder.output_size)

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        return self.head(self.encoder(x))


@MODEL_REGISTRY.register("iqn")
class IQN(_QuantileQ):
    """Implicit quantile network: ``forward(obs) -> {'logit': (B, A), 'q': (N, B, A), 'quantiles': (N * B, 1)}``,
    ``N = num_quantiles`` fractions drawn uniformly at each call (see :class:`QuantileHead`)."""

    head_cls = QuantileHead


@MODEL_REGISTRY.register("fqf")
class FQF(_QuantileQ):
    """Fully parameterised quantile function: ``forward(obs) -> {'logit', 'q': (B, N, A), 'quantiles': (B, N + 1),
    'quantiles_hats': (B, N), 'q_tau_i': (B, N - 1, A)}`` (see :class:`FQFHead`)."""

    head_cls = FQFHead
    config_ranges = {**_QuantileQ.config_ranges, "num_quantiles": at_least(2, integer=True)}
