"""The regularisers of the offline algorithms: CQL's logsumexp penalty (continuous and discrete), TD3+BC's
normalised weight, IQL's expectile loss and its advantage weights."""
from __future__ import annotations

import math

import torch


def cql_penalty(q_data: torch.Tensor, q_rand: torch.Tensor, q_curr: torch.Tensor, q_next: torch.Tensor,
                log_pi_curr: torch.Tensor, log_pi_next: torch.Tensor, action_dim: int) -> torch.Tensor:
    """CQL(H) with importance sampling (Kumar et al. 2020, min_q_version 3), for one critic:

    ``mean_b logsumexp_j [Q(s, a_rand_j) - log U, Q(s, a_next_j) - log pi(a_next_j|s'),
    Q(s, a_curr_j) - log pi(a_curr_j|s)] - mean_b Q(s, a_data)``

    ``q_data``: (B,); ``q_rand``, ``q_curr``, ``q_next``, ``log_pi_*``: (B, N); ``U`` is uniform on [-1, 1]^action_dim
    (density ``0.5 ** action_dim``).
    """
    log_uniform = action_dim * math.log(0.5)
    cat = torch.cat([q_rand - log_uniform, q_next - log_pi_next, q_curr - log_pi_curr], dim=1)
    return torch.logsumexp(cat, dim=1).mean() - q_data.mean()


def discrete_cql_penalty(q: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """CQL for discrete actions: ``mean_b [logsumexp_a Q(s, a) - Q(s, a_data)]``; ``q``: (B, A), ``action``: (B,)."""
    return (torch.logsumexp(q, dim=1) - q.gather(1, action.long().unsqueeze(1)).squeeze(1)).mean()


def td3_bc_lambda(q: torch.Tensor, alpha: float) -> torch.Tensor:
    """TD3+BC's weight of the Q term (Fujimoto & Gu 2021): ``alpha / mean|Q|``, no gradient."""
    return alpha / q.abs().mean().detach()


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """IQL's asymmetric L2 loss ``mean |tau - 1(diff < 0)| * diff^2`` of ``diff = Q(s, a) - V(s)``."""
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * diff.pow(2)).mean()


def advantage_weights(advantage: torch.Tensor, beta: float, max_weight: float = 100.0) -> torch.Tensor:
    """IQL's (and AWR's) policy-extraction weights ``min(exp(beta * A), max_weight)``, no gradient."""
    return torch.exp(beta * advantage.detach()).clamp(max=max_weight)
