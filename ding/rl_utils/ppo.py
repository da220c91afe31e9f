"""PPO losses: the clipped surrogate policy loss, the (clipped) value loss and the entropy bonus."""
from __future__ import annotations

from typing import NamedTuple

import torch

from .distribution import action_distribution


class ppo_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """Inputs of :func:`ppo_error` for a batch of B samples.

    ``logit_new`` / ``logit_old``: the current and the collecting policy's action distribution parameters ((B, A)
    logits, or ``{'mu', 'sigma'}`` of a diagonal Gaussian). ``value_new`` / ``value_old``: (B,) current and
    collect-time values. ``adv``: (B,) advantages (normalised or not). ``return_``: (B,) value targets. ``weight``:
    (B,) per-sample weights or None.
    """

    logit_new: torch.Tensor | dict
    logit_old: torch.Tensor | dict
    action: torch.Tensor
    value_new: torch.Tensor
    value_old: torch.Tensor
    adv: torch.Tensor
    return_: torch.Tensor
    weight: torch.Tensor | None


class ppo_loss(NamedTuple):  # noqa: N801
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy_loss: torch.Tensor


class ppo_info(NamedTuple):  # noqa: N801
    approx_kl: float  # mean of log pi_old(a|s) - log pi_new(a|s)
    clipfrac: float  # fraction of samples whose ratio left [1 - clip_ratio, 1 + clip_ratio]


def ppo_policy_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor, clip_ratio: float = 0.2,
                    weight: torch.Tensor | None = None, dual_clip: float | None = None) -> torch.Tensor:
    """``-mean(min(ratio * adv, clip(ratio, 1 - eps, 1 + eps) * adv))`` with ``ratio = exp(logp_new - logp_old)``;
    ``dual_clip`` (> 1) also bounds the loss of negative advantages by ``dual_clip * adv``."""
    ratio = torch.exp(logp_new - logp_old)
    surr = torch.min(ratio * adv, ratio.clamp(1 - clip_ratio, 1 + clip_ratio) * adv)
    if dual_clip is not None:
        surr = torch.where(adv < 0, torch.max(surr, dual_clip * adv), surr)
    return _weighted_mean(-surr, weight)


def ppo_value_loss(value_new: torch.Tensor, value_old: torch.Tensor, return_: torch.Tensor, clip_ratio: float = 0.2,
                   use_value_clip: bool = True, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``0.5 * mean((V - R)^2)``; with ``use_value_clip`` the larger of that and the error of ``V`` kept within
    ``clip_ratio`` of the collect-time value (so one update cannot move the value far)."""
    err = (value_new - return_).pow(2)
    if use_value_clip:
        clipped = value_old + (value_new - value_old).clamp(-clip_ratio, clip_ratio)
        err = torch.max(err, (clipped - return_).pow(2))
    return 0.5 * _weighted_mean(err, weight)


def ppo_error(data: ppo_data, clip_ratio: float = 0.2, use_value_clip: bool = True,
              dual_clip: float | None = None) -> tuple[ppo_loss, ppo_info]:
    """The three PPO loss terms and two diagnostics for discrete ((B, A) logits) or Gaussian (``{'mu', 'sigma'}``)
    policies. Total loss: ``policy_loss + value_weight * value_loss - entropy_weight * entropy_loss``."""
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"ppo_error: dual_clip must be > 1 (or None), got {dual_clip}")
    dist_new, dist_old = action_distribution(data.logit_new), action_distribution(data.logit_old)
    logp_new = dist_new.log_prob(data.action)
    with torch.no_grad():
        logp_old = dist_old.log_prob(data.action)
    policy_loss = ppo_policy_loss(logp_new, logp_old, data.adv, clip_ratio, data.weight, dual_clip)
    value_loss = ppo_value_loss(data.value_new, data.value_old, data.return_, clip_ratio, use_value_clip, data.weight)
    entropy_loss = _weighted_mean(dist_new.entropy(), data.weight)
    with torch.no_grad():
        approx_kl = (logp_old - logp_new).mean().item()
        clipfrac = ((logp_new - logp_old).exp().sub(1).abs() > clip_ratio).float().mean().item()
    return ppo_loss(policy_loss, value_loss, entropy_loss), ppo_info(approx_kl, clipfrac)


# DI-engine names the Gaussian variant separately; one function serves both here.
ppo_error_continuous = ppo_error


def _weighted_mean(x: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    return (x * weight).mean() if weight is not None else x.mean()


def shape_fn_ppo(args: tuple, kwargs: dict) -> torch.Size:
    """DI-engine's shape hint for its fused (HPC) PPO kernel: ``logit_new``'s shape, (B, N), of ``ppo_error``'s
    data given positionally or as ``data=``."""
    data = args[0] if len(args) > 0 else kwargs["data"]
    return data.logit_new.shape
