"""QMIX and VDN (``QMix``): recurrent agent Q-networks shared by the agents, mixed into one team Q-value.

Shapes are batch first: ``agent_state`` (B, T, A, obs_dim), ``global_state`` (B, T, state_dim), hidden states
(B, A, H); A is the agent axis. ``mixer=True`` mixes with QMIX's monotonic hypernetwork (:class:`Mixer`),
``mixer=False`` sums (VDN, :class:`VDNMixer`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ding.config.ranges import at_least, one_of, shape, sizes
from ding.utils import MODEL_REGISTRY

from ..common.nn_module import mlp


class VDNMixer(nn.Module):
    """VDN: the team Q-value is the sum of the agents' chosen Q-values, ``Q_tot = sum_a Q_a``."""

    def forward(self, agent_q: torch.Tensor, state: torch.Tensor | None = None) -> torch.Tensor:
        return agent_q.sum(-1)


class Mixer(nn.Module):
    """QMIX's mixing network: ``Q_tot = w2 . elu(W1^T q + b1) + V(s)`` with ``W1 = |f1(s)|``, ``w2 = |f2(s)|``
    produced by hypernetworks of the global state ``s``. The absolute values make ``Q_tot`` monotonic in every
    agent's Q-value, so the agents' greedy actions are the team's greedy action."""

    def __init__(self, agent_num: int, state_dim: int, embed_dim: int = 64, hypernet_embed: int = 64) -> None:
        super().__init__()
        self.agent_num, self.embed_dim = int(agent_num), int(embed_dim)
        self.hyper_w1 = nn.Sequential(nn.Linear(state_dim, hypernet_embed), nn.ReLU(),
                                      nn.Linear(hypernet_embed, self.agent_num * self.embed_dim))
        self.hyper_w2 = nn.Sequential(nn.Linear(state_dim, hypernet_embed), nn.ReLU(),
                                      nn.Linear(hypernet_embed, self.embed_dim))
        self.hyper_b1 = nn.Linear(state_dim, self.embed_dim)
        self.hyper_v = nn.Sequential(nn.Linear(state_dim, self.embed_dim), nn.ReLU(), nn.Linear(self.embed_dim, 1))

    def forward(self, agent_q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """``agent_q`` (..., A), ``state`` (..., state_dim) -> ``Q_tot`` (...)."""
        lead = agent_q.shape[:-1]
        q = agent_q.reshape(-1, 1, self.agent_num)
        s = state.reshape(-1, state.shape[-1])
        w1 = self.hyper_w1(s).abs().view(-1, self.agent_num, self.embed_dim)
        b1 = self.hyper_b1(s).view(-1, 1, self.embed_dim)
        hidden = F.elu(torch.bmm(q, w1) + b1)
        w2 = self.hyper_w2(s).abs().view(-1, self.embed_dim, 1)
        total = torch.bmm(hidden, w2).view(-1) + self.hyper_v(s).view(-1)
        return total.view(lead)


@MODEL_REGISTRY.register("qmix")
class QMix(nn.Module):
    """``agent_q(agent_state, hidden) -> (q (B, T, A, n_actions), next_hidden (B, A, H))`` with one MLP + GRU
    network shared by the agents; ``mix(chosen_q (B, T, A), global_state (B, T, D)) -> Q_tot (B, T)``.
    ``forward({'obs': {...}, 'prev_state': hidden, 'action': (B, T, A)})`` runs both."""

    config_ranges = {
        "agent_num": at_least(1, integer=True),
        "obs_shape": shape(),
        "global_obs_shape": shape(),
        "action_shape": shape(),
        "hidden_size_list": sizes(),
        "lstm_type": one_of("gru"),
    }

    def __init__(
        self,
        agent_num: int,
        obs_shape: int,
        global_obs_shape: int,
        action_shape: int,
        hidden_size_list: Sequence[int] = (64, 128),
        mixer: bool = True,
        lstm_type: str = "gru",
        activation: nn.Module | None = None,
        dueling: bool = False,
    ) -> None:
        super().__init__()
        if dueling:
            raise ValueError("QMix dueling=True is not supported; set policy.model.dueling=False")
        self.agent_num, self.obs_shape = int(agent_num), int(obs_shape)
        self.global_obs_shape, self.action_shape = int(global_obs_shape), int(action_shape)
        self.hidden_size = int(hidden_size_list[-1])
        self.encoder = mlp(self.obs_shape, list(hidden_size_list), activation)
        self.rnn = nn.GRU(self.hidden_size, self.hidden_size, batch_first=True)
        self.head = nn.Linear(self.hidden_size, self.action_shape)
        self.mixer: nn.Module = Mixer(self.agent_num, self.global_obs_shape, self.hidden_size) if mixer \
            else VDNMixer()

    def agent_q(self, agent_state: torch.Tensor, hidden: torch.Tensor | None = None) -> tuple[torch.Tensor,
                                                                                              torch.Tensor]:
        b, t, a = agent_state.shape[:3]
        x = self.encoder(agent_state).transpose(1, 2).reshape(b * a, t, self.hidden_size)
        h0 = None if hidden is None else hidden.reshape(1, b * a, self.hidden_size).contiguous()
        out, h = self.rnn(x, h0)
        q = self.head(out).view(b, a, t, self.action_shape).transpose(1, 2)
        return q, h.view(b, a, self.hidden_size)

    def mix(self, chosen_q: torch.Tensor, global_state: torch.Tensor) -> torch.Tensor:
        return self.mixer(chosen_q, global_state)

    def forward(self, data: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        obs = data["obs"]
        q, next_state = self.agent_q(obs["agent_state"], data.get("prev_state"))
        out = {"logit": q, "next_state": next_state}
        if data.get("action") is not None:
            chosen = q.gather(-1, data["action"].long().unsqueeze(-1)).squeeze(-1)
            out["total_q"] = self.mix(chosen, obs["global_state"])
        return out
