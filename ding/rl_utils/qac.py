"""Targets and losses of actor-critics with Q critics (DDPG, TD3, SAC), for continuous actions in [-1, 1]."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from .td import nstep_return

QValues = torch.Tensor | Sequence[torch.Tensor]


def min_q(q: QValues) -> torch.Tensor:
    """The element-wise minimum over critics (clipped double Q); a single (B,) tensor is returned as is."""
    if isinstance(q, torch.Tensor):
        return q
    out = q[0]
    for other in q[1:]:
        out = torch.minimum(out, other)
    return out


def qac_td_target(
    reward: torch.Tensor,
    next_q: QValues,
    done: torch.Tensor,
    gamma: float,
    nstep: int = 1,
    value_gamma: torch.Tensor | None = None,
    next_log_prob: torch.Tensor | None = None,
    alpha: float | torch.Tensor = 0.0,
) -> torch.Tensor:
    """Bootstrapped target of the Q critics, no gradient:

    ``ret + value_gamma * (1 - done) * (min_i next_q_i - alpha * next_log_prob)``

    ``reward``: (B,) or, for n-step samples, (nstep, B) (summed with ``gamma^k``). ``next_q``: (B,) or a list of
    (B,) target-critic values at (next_obs, next_action), one per critic. ``done``: (B,) termination (a time limit is
    not one, so it is bootstrapped). ``value_gamma`` defaults to ``gamma ** nstep``. ``next_log_prob`` (SAC) adds the
    entropy bonus of the next action, weighted by the temperature ``alpha``.
    """
    with torch.no_grad():
        next_v = min_q(next_q)
        if next_log_prob is not None:
            next_v = next_v - alpha * next_log_prob
        ret = reward if reward.dim() == 1 and nstep == 1 else nstep_return(reward, gamma, nstep)
        discount = gamma ** nstep if value_gamma is None else value_gamma
        return ret + discount * (1.0 - done.to(next_v.dtype)) * next_v


def critic_loss(q: QValues, target: torch.Tensor,
                weight: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(loss, td_error)``: the sum over critics of the mean squared error to ``target`` (each sample's error
    scaled by its importance weight when ``weight`` is given), and the detached per-sample ``target - q`` averaged
    over critics (its absolute value is the priority for prioritized replay)."""
    qs = [q] if isinstance(q, torch.Tensor) else list(q)
    per_sample = sum(F.mse_loss(qi, target, reduction="none") for qi in qs)
    assert isinstance(per_sample, torch.Tensor), "critic_loss: no critic Q values"  # sum() of no tensors is 0
    if weight is not None:
        per_sample = per_sample * weight
    td_error = torch.stack([target - qi for qi in qs]).mean(0).detach()
    return per_sample.mean(), td_error


def target_policy_smoothing(action: torch.Tensor, sigma: float, noise_min: float, noise_max: float,
                            low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    """TD3's smoothed target action: ``clip(action + clip(N(0, sigma), noise_min, noise_max), low, high)``.

    Noise comes from torch's global RNG (seeded by ``set_pkg_seed``, captured on resume)."""
    noise = (torch.randn_like(action) * sigma).clamp(noise_min, noise_max)
    return (action + noise).clamp(low, high)
