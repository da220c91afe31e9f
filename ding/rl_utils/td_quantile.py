"""n-step TD losses of the quantile Q-networks (QR-DQN, IQN, FQF) under DI-engine's names.

All three fit the taken action's return quantiles to the n-step target built from the bootstrap action's
quantiles, with the quantile Huber loss; they differ only in where the fractions come from (fixed midpoints,
the fractions IQN drew, FQF's proposed midpoints) and in the layout of their Q tensors.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from .td import nstep_return


def quantile_huber_per_sample(pred: torch.Tensor, target: torch.Tensor, tau: torch.Tensor,
                              kappa: float = 1.0) -> torch.Tensor:
    """``sum_i mean_j |tau_i - 1(u_ij < 0)| * huber_kappa(u_ij) / kappa`` per sample, ``u_ij = target_j - pred_i``.

    ``pred`` (B, N) quantiles at fractions ``tau`` ((N,) shared or (B, N) per sample); ``target`` (B, M) samples of
    the target distribution. Returns (B,). ``kappa = 0`` is the plain quantile (absolute) loss.
    """
    u = target.unsqueeze(1) - pred.unsqueeze(2)  # (B, N, M)
    if kappa > 0:
        huber = F.huber_loss(pred.unsqueeze(2).expand_as(u), target.unsqueeze(1).expand_as(u), reduction="none",
                             delta=kappa) / kappa
    else:
        huber = u.abs()
    tau = tau.view(1, -1) if tau.dim() == 1 else tau
    weight = (tau.unsqueeze(2) - (u.detach() < 0).to(u.dtype)).abs()
    return (weight * huber).mean(2).sum(1)


def _target(next_sa: torch.Tensor, reward: torch.Tensor, done: torch.Tensor, gamma: float, nstep: int,
            value_gamma: torch.Tensor | float | None) -> torch.Tensor:
    """``sum_k gamma^k r_k + value_gamma * next_sa * (1 - done)`` for bootstrap quantiles ``next_sa`` (B, M)."""
    ret = nstep_return(reward, gamma, nstep)
    vg = gamma ** nstep if value_gamma is None else value_gamma
    if isinstance(vg, torch.Tensor) and vg.dim() == 1:
        vg = vg.unsqueeze(1)
    return ret.unsqueeze(1) + vg * next_sa * (1.0 - done.to(next_sa.dtype)).unsqueeze(1)


def _reduce(per_sample: torch.Tensor, weight: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    loss = (per_sample * weight).mean() if weight is not None else per_sample.mean()
    return loss, per_sample.detach()


class qrdqn_nstep_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """``q`` / ``next_n_q`` (B, A, N) quantiles; ``action`` / ``next_n_action`` (B,); ``reward`` (nstep, B);
    ``done`` (B,); ``tau``: the number of quantiles N (the fractions are the midpoints ``(i + 0.5) / N``) or the
    fractions themselves; ``weight`` (B,) or None."""

    q: torch.Tensor
    next_n_q: torch.Tensor
    action: torch.Tensor
    next_n_action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    tau: int | torch.Tensor
    weight: torch.Tensor | None


def qrdqn_nstep_td_error(data: qrdqn_nstep_td_data, gamma: float, nstep: int = 1,
                         value_gamma: torch.Tensor | float | None = None,
                         kappa: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """QR-DQN's n-step loss: ``(weighted mean loss, per-sample loss (B,))``."""
    q, next_n_q, action, next_n_action, reward, done, tau, weight = data
    batch = torch.arange(q.shape[0], device=q.device)
    q_sa = q[batch, action.long()]  # (B, N)
    with torch.no_grad():
        target = _target(next_n_q[batch, next_n_action.long()], reward, done, gamma, nstep, value_gamma)
    n = q_sa.shape[1]
    fractions = tau if isinstance(tau, torch.Tensor) else (torch.arange(n, device=q.device) + 0.5) / n
    return _reduce(quantile_huber_per_sample(q_sa, target, fractions.reshape(-1, n).squeeze(0), kappa), weight)


class iqn_nstep_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """``q`` (N, B, A) / ``next_n_q`` (M, B, A) quantiles at sampled fractions; ``replay_quantiles`` (N, B, 1) the
    fractions of ``q``; the other fields as :class:`qrdqn_nstep_td_data`."""

    q: torch.Tensor
    next_n_q: torch.Tensor
    action: torch.Tensor
    next_n_action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    replay_quantiles: torch.Tensor
    weight: torch.Tensor | None


def iqn_nstep_td_error(data: iqn_nstep_td_data, gamma: float, nstep: int = 1, kappa: float = 1.0,
                       value_gamma: torch.Tensor | float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """IQN's n-step loss: ``(weighted mean loss, per-sample loss (B,))``."""
    q, next_n_q, action, next_n_action, reward, done, replay_quantiles, weight = data
    idx = action.long().view(1, -1, 1).expand(q.shape[0], -1, 1)
    q_sa = q.gather(2, idx).squeeze(2).t()  # (B, N)
    with torch.no_grad():
        nidx = next_n_action.long().view(1, -1, 1).expand(next_n_q.shape[0], -1, 1)
        target = _target(next_n_q.gather(2, nidx).squeeze(2).t(), reward, done, gamma, nstep, value_gamma)
    tau = replay_quantiles.reshape(q.shape[0], q.shape[1]).t()  # (B, N)
    return _reduce(quantile_huber_per_sample(q_sa, target, tau, kappa), weight)


class fqf_nstep_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """``q`` / ``next_n_q`` (B, N, A) quantiles at FQF's proposed midpoints ``quantiles_hats`` (B, N); the other
    fields as :class:`qrdqn_nstep_td_data`."""

    q: torch.Tensor
    next_n_q: torch.Tensor
    action: torch.Tensor
    next_n_action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    quantiles_hats: torch.Tensor
    weight: torch.Tensor | None


def fqf_nstep_td_error(data: fqf_nstep_td_data, gamma: float, nstep: int = 1, kappa: float = 1.0,
                       value_gamma: torch.Tensor | float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """FQF's quantile-value n-step loss: ``(weighted mean loss, per-sample loss (B,))`` (the fraction loss is
    trained separately, on the model's ``q_tau_i``)."""
    q, next_n_q, action, next_n_action, reward, done, quantiles_hats, weight = data
    idx = action.long().view(-1, 1, 1).expand(-1, q.shape[1], 1)
    q_sa = q.gather(2, idx).squeeze(2)  # (B, N)
    with torch.no_grad():
        nidx = next_n_action.long().view(-1, 1, 1).expand(-1, next_n_q.shape[1], 1)
        target = _target(next_n_q.gather(2, nidx).squeeze(2), reward, done, gamma, nstep, value_gamma)
    return _reduce(quantile_huber_per_sample(q_sa, target, quantiles_hats.detach(), kappa), weight)
