"""One-step and n-step TD losses of state values and Q-values in DI-engine's functional form (namedtuple in,
``(loss, per-sample loss)`` out): what DI-engine's SAC, DDPG, TD3, PPO and R2D2 policy files call."""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F

from .td import as_gamma, nstep_return, q_nstep_td_data
from .value_rescale import value_inv_transform, value_transform

Criterion = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(pred, target, reduction="none")


def _weighted(per_sample: torch.Tensor, weight: torch.Tensor | float | None) -> torch.Tensor:
    if weight is None:
        return per_sample.mean()
    if not torch.is_tensor(weight):  # one weight for the whole batch
        return per_sample.mean() * float(weight)
    while weight.dim() < per_sample.dim():
        weight = weight.unsqueeze(-1)
    return (per_sample * weight).mean()


class v_1step_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """``v``: (B,) or (B, K) predicted values; ``next_v``: the same shape, values of the next state; ``reward``,
    ``done``: (B,); ``weight``: (B,) or None."""

    v: torch.Tensor
    next_v: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor | None
    weight: torch.Tensor | None


def v_1step_td_error(data: v_1step_td_data, gamma: float,
                     criterion: Criterion | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Target ``reward + gamma * (1 - done) * next_v`` (detached); returns ``(weighted mean loss, per-sample loss)``
    with the per-sample loss shaped like ``v``."""
    v, next_v, reward, done, weight = data
    if v.dim() > reward.dim():  # several values per sample (e.g. agents): broadcast the per-sample terms
        reward = reward.unsqueeze(-1)
        done = done.unsqueeze(-1) if done is not None else None
    not_done = 1.0 if done is None else 1.0 - done.to(v.dtype)
    target = (reward + gamma * not_done * next_v).detach()
    per_sample = (criterion or _mse)(v, target)
    return _weighted(per_sample, weight), per_sample


class v_nstep_td_data(NamedTuple):  # noqa: N801
    """``v``: (B,); ``next_n_v``: (B,) value n steps later; ``reward``: (nstep, B); ``done``: (B,); ``weight``;
    ``value_gamma``: (B,) discount of the bootstrap (None: ``gamma ** nstep``)."""

    v: torch.Tensor
    next_n_v: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None
    value_gamma: torch.Tensor | None


def v_nstep_td_error(data: v_nstep_td_data, gamma: float, nstep: int = 1,
                     criterion: Criterion | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    v, next_n_v, reward, done, weight, value_gamma = data
    discount = gamma ** nstep if value_gamma is None else value_gamma
    target = (nstep_return(reward, gamma, nstep) + discount * (1.0 - done.to(v.dtype)) * next_n_v).detach()
    per_sample = (criterion or _mse)(v, target)
    return _weighted(per_sample, weight), per_sample


class q_1step_td_data(NamedTuple):  # noqa: N801
    """``q`` / ``next_q``: (B, A); ``act`` / ``next_act``: (B,); ``reward``, ``done``: (B,); ``weight``."""

    q: torch.Tensor
    next_q: torch.Tensor
    act: torch.Tensor
    next_act: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None


def q_1step_td_error(data: q_1step_td_data, gamma: float,
                     criterion: Criterion | None = None) -> torch.Tensor:
    """One-step Q-learning loss (DI-engine returns only the weighted mean here)."""
    q, next_q, act, next_act, reward, done, weight = data
    batch = torch.arange(act.shape[0], device=act.device)
    q_sa = q[batch, act.long()]
    target = (reward + gamma * (1.0 - done.to(q.dtype)) * next_q[batch, next_act.long()]).detach()
    return _weighted((criterion or _mse)(q_sa, target), weight)


class q_v_1step_td_data(NamedTuple):  # noqa: N801
    """``q``: (B, A) Q-values; ``v``: (B,) soft state value of the next state; ``act``: (B,); ``reward``,
    ``done``: (B,); ``weight``."""

    q: torch.Tensor
    v: torch.Tensor
    act: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None


def q_v_1step_td_error(data: q_v_1step_td_data, gamma: float,
                       criterion: Criterion | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``Q(s, a)`` regressed onto ``reward + gamma * (1 - done) * v`` (discrete SAC); ``(loss, per-sample loss)``."""
    q, v, act, reward, done, weight = data
    batch = torch.arange(act.shape[0], device=act.device)
    q_sa = q[batch, act.long()]
    target = (reward + gamma * (1.0 - done.to(q.dtype)) * v).detach()
    per_sample = (criterion or _mse)(q_sa, target)
    return _weighted(per_sample, weight), per_sample


def q_nstep_td_error_with_rescale(
    data: q_nstep_td_data, gamma: float | torch.Tensor | Sequence[torch.Tensor], nstep: int = 1,
    value_gamma: torch.Tensor | float | None = None,
    criterion: Criterion | None = None, trans_fn: Callable[[torch.Tensor], torch.Tensor] = value_transform,
    inv_trans_fn: Callable[[torch.Tensor], torch.Tensor] = value_inv_transform,
) -> tuple[torch.Tensor, torch.Tensor]:
    """n-step Q loss with R2D2's value rescaling: the bootstrap value goes through ``inv_trans_fn`` before the
    n-step target is formed and the target through ``trans_fn`` after; ``(loss, per-sample loss)``."""
    q, next_n_q, action, next_n_action, reward, done, weight = data
    gamma = as_gamma(gamma, q)
    q_sa = q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        next_q_sa = inv_trans_fn(next_n_q.gather(-1, next_n_action.long().unsqueeze(-1)).squeeze(-1))
        discount = gamma ** nstep if value_gamma is None else value_gamma
        target = trans_fn(nstep_return(reward, gamma, nstep) + discount * (1.0 - done.to(q.dtype)) * next_q_sa)
    per_sample = (criterion or _mse)(q_sa, target)
    return _weighted(per_sample, weight), per_sample
