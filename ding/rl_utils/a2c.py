"""A2C loss: policy gradient with an advantage baseline, value regression and an entropy bonus."""
from __future__ import annotations

from typing import NamedTuple

import torch

from .distribution import action_distribution


class a2c_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """``logit``: (B, A) logits or ``{'mu', 'sigma'}``; ``action``; ``value``: (B,) current values; ``adv``: (B,)
    advantages; ``return_``: (B,) value targets; ``weight``: (B,) or None."""

    logit: torch.Tensor | dict
    action: torch.Tensor
    value: torch.Tensor
    adv: torch.Tensor
    return_: torch.Tensor
    weight: torch.Tensor | None


class a2c_loss(NamedTuple):  # noqa: N801
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy_loss: torch.Tensor


def a2c_error(data: a2c_data) -> a2c_loss:
    """``policy_loss = -mean(log pi(a|s) * adv)``, ``value_loss = mean((R - V)^2)``, ``entropy_loss = mean(H)``.
    Total loss: ``policy_loss + value_weight * value_loss - entropy_weight * entropy_loss``."""
    dist = action_distribution(data.logit)
    w = data.weight if data.weight is not None else torch.ones_like(data.value)
    policy_loss = -(dist.log_prob(data.action) * data.adv * w).mean()
    value_loss = ((data.return_ - data.value).pow(2) * w).mean()
    entropy_loss = (dist.entropy() * w).mean()
    return a2c_loss(policy_loss, value_loss, entropy_loss)


# DI-engine names the Gaussian variant separately; one function serves both here.
a2c_error_continuous = a2c_error
