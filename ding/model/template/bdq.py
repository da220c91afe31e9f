"""Branching dueling Q-network (BDQ): one discrete sub-action per branch, sharing a state value."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least
from ding.utils import MODEL_REGISTRY

from ..common import mlp
from .q_learning import DQN, as_shape, build_encoder


@MODEL_REGISTRY.register("bdq")
class BDQ(nn.Module):
    """Encoder, a shared state-value stream and one advantage stream per branch:
    ``Q_d(s, a) = V(s) + A_d(s, a) - mean_a A_d(s, a)``.

    ``forward(obs) -> {'logit': (B, num_branches, action_bins_per_branch)}``: the Q-values of every branch's bins
    (each branch acts by its own argmax). ``num_branches`` is an int or a one-element shape such as ``(6,)``.
    """

    config_ranges = {**{k: v for k, v in DQN.config_ranges.items() if k not in ("action_shape", "head_layer_num")},
                     "num_branches": at_least(1, integer=True), "action_bins_per_branch": at_least(1, integer=True),
                     "layer_num": at_least(1, integer=True)}

    def __init__(self, obs_shape: int | Sequence[int], num_branches: int | Sequence[int] = 1,
                 action_bins_per_branch: int = 2, layer_num: int = 3, a_layer_num: int | None = None,
                 v_layer_num: int | None = None, encoder_hidden_size_list: Sequence[int] | None = None,
                 head_hidden_size: int | None = None, activation: nn.Module | None = None,
                 norm_type: str | None = None) -> None:
        super().__init__()
        self.obs_shape = as_shape(obs_shape, "BDQ obs_shape")
        branches = as_shape(num_branches, "BDQ num_branches")
        if len(branches) != 1:
            raise ValueError(f"BDQ num_branches {branches}: give the number of branches (an int)")
        self.num_branches, self.action_bins_per_branch = branches[0], int(action_bins_per_branch)
        if self.num_branches < 1 or self.action_bins_per_branch < 1:
            raise ValueError(f"BDQ: num_branches ({self.num_branches}) and action_bins_per_branch "
                             f"({self.action_bins_per_branch}) must be >= 1")
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        feature, hidden = self.encoder.output_size, head_hidden_size or self.encoder.output_size
        a_layers = layer_num if a_layer_num is None else a_layer_num
        v_layers = layer_num if v_layer_num is None else v_layer_num
        self.V = mlp(feature, [hidden] * v_layers, activation, norm_type, out_dim=1)
        self.A = nn.ModuleList([mlp(feature, [hidden] * a_layers, activation, norm_type,
                                    out_dim=self.action_bins_per_branch) for _ in range(self.num_branches)])

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        feature = self.encoder(x)
        advantage = torch.stack([a(feature) for a in self.A], dim=1)  # (B, branches, bins)
        value = self.V(feature).unsqueeze(1)  # (B, 1, 1)
        return {"logit": value + advantage - advantage.mean(dim=-1, keepdim=True)}
