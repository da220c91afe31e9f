"""PPO's policy and value losses on their own, in DI-engine's functional form (``ppo_policy_error``,
``ppo_value_error``); the combined loss is :func:`ding.rl_utils.ppo_error`."""
from __future__ import annotations

from typing import NamedTuple

import torch

from .distribution import action_distribution
from .ppo import ppo_info, ppo_policy_loss, ppo_value_loss


class ppo_policy_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    logit_new: torch.Tensor | dict
    logit_old: torch.Tensor | dict
    action: torch.Tensor
    adv: torch.Tensor
    weight: torch.Tensor | None


class ppo_policy_loss_terms(NamedTuple):  # noqa: N801 - DI-engine calls this namedtuple 'ppo_policy_loss'
    policy_loss: torch.Tensor
    entropy_loss: torch.Tensor


class ppo_value_data(NamedTuple):  # noqa: N801
    value_new: torch.Tensor
    value_old: torch.Tensor
    return_: torch.Tensor
    weight: torch.Tensor | None


def ppo_policy_error(data: ppo_policy_data, clip_ratio: float = 0.2,
                     dual_clip: float | None = None) -> tuple[ppo_policy_loss_terms, ppo_info]:
    """Clipped surrogate loss and entropy of discrete ((B, A) logits) or Gaussian (``{'mu', 'sigma'}``) policies,
    and ``ppo_info(approx_kl, clipfrac)``."""
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"ppo_policy_error: dual_clip must be > 1 (or None), got {dual_clip}")
    dist_new, dist_old = action_distribution(data.logit_new), action_distribution(data.logit_old)
    logp_new = dist_new.log_prob(data.action)
    with torch.no_grad():
        logp_old = dist_old.log_prob(data.action)
    policy_loss = ppo_policy_loss(logp_new, logp_old, data.adv, clip_ratio, data.weight, dual_clip)
    entropy = dist_new.entropy()
    entropy_loss = (entropy * data.weight).mean() if data.weight is not None else entropy.mean()
    with torch.no_grad():
        approx_kl = (logp_old - logp_new).mean().item()
        clipfrac = ((logp_new - logp_old).exp().sub(1).abs() > clip_ratio).float().mean().item()
    return ppo_policy_loss_terms(policy_loss, entropy_loss), ppo_info(approx_kl, clipfrac)


# DI-engine names the Gaussian variant separately; one function serves both here.
ppo_policy_error_continuous = ppo_policy_error


def ppo_value_error(data: ppo_value_data, clip_ratio: float = 0.2, use_value_clip: bool = True) -> torch.Tensor:
    """``0.5 * mean((V - R)^2)``, optionally against the value clipped near the collect-time one."""
    return ppo_value_loss(data.value_new, data.value_old, data.return_, clip_ratio, use_value_clip, data.weight)
