"""Discrete SAC's model: a categorical actor and (twin) critics of every action's Q-value, in DI-engine's layout."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least
from ding.utils import MODEL_REGISTRY

from ..common import DiscreteHead, mlp
from .q_learning import DQN, as_shape, build_encoder

MODES = ("compute_actor", "compute_critic")


@MODEL_REGISTRY.register("discrete_qac")
class DiscreteQAC(nn.Module):
    """``compute_actor(obs) -> {'logit': (B, A)}``; ``compute_critic(obs) -> {'q_value': (B, A)}``, a list of two
    with ``twin_critic``.

    DI-engine's layout: ``actor = ModuleList([encoder, head])`` and ``critic = ModuleList([encoder, heads])``
    (``heads`` a ModuleList of two with ``twin_critic``; the twins share the critic's encoder). Vector observations
    go to the heads as they are; ``(C, H, W)`` images through a conv encoder (``encoder_hidden_size_list``), one for
    the actor and one for the critic unless ``share_encoder``.
    """

    config_ranges = {**{k: v for k, v in DQN.config_ranges.items() if not k.startswith("head_")},
                     "actor_head_hidden_size": at_least(1, integer=True),
                     "critic_head_hidden_size": at_least(1, integer=True)}

    def __init__(self, obs_shape: int | Sequence[int], action_shape: int | Sequence[int], twin_critic: bool = False,
                 actor_head_hidden_size: int = 64, actor_head_layer_num: int = 1, critic_head_hidden_size: int = 64,
                 critic_head_layer_num: int = 1, activation: nn.Module | None = None, norm_type: str | None = None,
                 encoder_hidden_size_list: Sequence[int] | None = None, share_encoder: bool = False) -> None:
        super().__init__()
        self.obs_shape = as_shape(obs_shape, "DiscreteQAC obs_shape")
        action = as_shape(action_shape, "DiscreteQAC action_shape")
        if len(action) != 1:
            raise ValueError(f"DiscreteQAC action_shape {action}: give the number of actions (an int)")
        self.action_shape, self.twin_critic = action[0], bool(twin_critic)

        def encoder() -> tuple[nn.Module, int]:
            if len(self.obs_shape) == 1:
                return nn.Identity(), self.obs_shape[0]
            enc = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
            return enc, enc.output_size

        def head(hidden: int, layers: int, feat: int) -> nn.Module:
            return nn.Sequential(mlp(feat, [hidden], activation, norm_type),
                                 DiscreteHead(hidden, self.action_shape, layers, activation, norm_type))

        actor_encoder, feat = encoder()
        critic_encoder = actor_encoder if share_encoder else encoder()[0]
        self.actor = nn.ModuleList([actor_encoder, head(actor_head_hidden_size, actor_head_layer_num, feat)])
        critic_head: nn.Module
        if self.twin_critic:
            critic_head = nn.ModuleList([head(critic_head_hidden_size, critic_head_layer_num, feat) for _ in range(2)])
        else:
            critic_head = head(critic_head_hidden_size, critic_head_layer_num, feat)
        self.critic = nn.ModuleList([critic_encoder, critic_head])

    def forward(self, inputs: torch.Tensor, mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"DiscreteQAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(inputs)

    def compute_actor(self, obs: torch.Tensor) -> dict[str, Any]:
        encoder, head = self.actor[0], self.actor[1]
        return {"logit": head(encoder(obs))["logit"]}

    def compute_critic(self, obs: torch.Tensor) -> dict[str, Any]:
        encoder, heads = self.critic[0], self.critic[1]
        feat = encoder(obs)
        if self.twin_critic:
            return {"q_value": [h(feat)["logit"] for h in heads]}  # type: ignore[attr-defined]  # a ModuleList
        return {"q_value": heads(feat)["logit"]}
