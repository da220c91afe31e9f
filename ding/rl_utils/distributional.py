"""Distributional (C51) TD learning: project the n-step Bellman target onto a fixed support, cross-entropy loss."""
from __future__ import annotations

from typing import Any, NamedTuple

import torch

from .td import nstep_return


class dist_nstep_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """Inputs of :func:`dist_nstep_td_error` (DI-engine's field names).

    ``dist``: (B, A, n_atom) online probabilities of ``obs``, or their logs when ``log_dist`` is given to the loss.
    ``next_n_dist``: (B, A, n_atom) target-network probabilities of the state n steps later. ``act``: (B,) taken
    actions. ``next_n_act``: (B,) actions at which ``next_n_dist`` is read (the online argmax for double Q).
    ``reward``: (nstep, B) or (B,) when ``nstep == 1``. ``done``: (B,) termination within the window.
    ``weight``: (B,) importance-sampling weights or None.
    """

    dist: torch.Tensor
    next_n_dist: torch.Tensor
    act: torch.Tensor
    next_n_act: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None


def categorical_projection(
    next_probs: torch.Tensor, ret: torch.Tensor, discount: torch.Tensor, v_min: float, v_max: float
) -> torch.Tensor:
    """Project the distribution of ``ret + discount * Z`` onto the support ``linspace(v_min, v_max, n_atom)``.

    ``next_probs``: (B, n_atom) probabilities of Z on the support; ``ret`` and ``discount``: (B,) (``discount`` is 0
    where nothing is bootstrapped). Each shifted atom is clipped to [v_min, v_max] and its mass split between the two
    neighbouring atoms in proportion to closeness (all of it to one atom when it lands exactly on it).

    The clipping is done on the fractional atom index, clamped to ``[0, n_atom - 1]``: clipping the value to
    ``v_max`` first gave, in float32, an index a hair above ``n_atom - 1`` on supports such as ``v_min=0.1,
    v_max=0.3`` (a ceiling past the last atom), or a hair below it (some mass of a clipped target on the atom
    before the edge) on narrow ones.
    """
    n_atom = next_probs.shape[-1]
    delta = (v_max - v_min) / (n_atom - 1)
    support = torch.linspace(v_min, v_max, n_atom, dtype=next_probs.dtype, device=next_probs.device)
    tz = ret.unsqueeze(-1) + discount.unsqueeze(-1) * support
    b = ((tz - v_min) / delta).clamp(0, n_atom - 1)  # fractional atom index, clipped to the support
    lower, upper = b.floor(), b.ceil()
    exact = (lower == upper).to(next_probs.dtype)
    proj = torch.zeros_like(next_probs)
    proj.scatter_add_(-1, lower.long(), next_probs * (upper - b + exact))
    proj.scatter_add_(-1, upper.long(), next_probs * (b - lower))
    return proj


def dist_nstep_td_error(
    data: dist_nstep_td_data,
    gamma: float,
    v_min: float,
    v_max: float,
    n_atom: int,
    nstep: int = 1,
    value_gamma: torch.Tensor | float | None = None,
    log_dist: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """C51 loss: ``(loss, per_sample_loss)``.

    The target distribution is ``sum_k gamma^k r_k + value_gamma * Z_target(s_n, next_n_act)`` (nothing bootstrapped
    on ``done``) projected onto the support; the loss is its cross-entropy with the online distribution of the taken
    action, weighted by ``weight`` and averaged. ``value_gamma`` defaults to ``gamma ** nstep``. Pass ``log_dist``
    (B, A, n_atom), the online log-probabilities, for a numerically safe log (else ``log(dist)`` clamped at 1e-8).
    ``per_sample_loss`` (detached) is the priority for prioritized replay.
    """
    dist, next_n_dist, act, next_n_act, reward, done, weight = data
    if act.dim() == 2:  # multi-agent (B, agents): each agent a sample of its own, the team's reward and done
        agents = act.shape[1]

        def per_agent(t: Any) -> Any:
            return t.repeat_interleave(agents, dim=-1) if torch.is_tensor(t) and t.dim() > 0 else t

        flat = dist_nstep_td_data(dist.flatten(0, 1), next_n_dist.flatten(0, 1), act.reshape(-1),
                                  next_n_act.reshape(-1), per_agent(reward), per_agent(done), per_agent(weight))
        loss, per_sample = dist_nstep_td_error(flat, gamma, v_min, v_max, n_atom, nstep, per_agent(value_gamma),
                                               None if log_dist is None else log_dist.flatten(0, 1))
        return loss, per_sample.view(-1, agents).mean(1)
    if dist.shape[-1] != n_atom:
        raise ValueError(f"dist_nstep_td_error: the distribution has {dist.shape[-1]} atoms but n_atom={n_atom}")
    batch = torch.arange(act.shape[0], device=act.device)
    log_p = log_dist[batch, act.long()] if log_dist is not None else dist[batch, act.long()].clamp_min(1e-8).log()
    with torch.no_grad():
        ret = nstep_return(reward, gamma, nstep)
        if value_gamma is None:
            value_gamma = gamma ** nstep
        discount = value_gamma * (1.0 - done.to(ret.dtype))
        if not torch.is_tensor(discount) or discount.dim() == 0:
            discount = torch.full_like(ret, float(discount))
        target = categorical_projection(next_n_dist[batch, next_n_act.long()], ret, discount, v_min, v_max)
    per_sample_loss = -(target * log_p).sum(-1)
    loss = (per_sample_loss * weight).mean() if weight is not None else per_sample_loss.mean()
    return loss, per_sample_loss.detach()
