"""The action distribution a policy head's output describes: categorical logits or a diagonal Gaussian.

Written out instead of ``torch.distributions``: the loss needs only ``log_prob`` and ``entropy``, and for the small
batches of RL updates the library classes' set-up costs more than the math.
"""
from __future__ import annotations

import math
from typing import Any

import torch

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class CategoricalDist:
    """Categorical over the last axis of (B, A) logits."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.log_p = torch.log_softmax(logits, dim=-1)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        return self.log_p.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.log_p.exp() * self.log_p).sum(-1)


class DiagGaussianDist:
    """Independent Gaussians over the last axis of (B, D) ``mu`` / ``sigma``; log-probs summed over D."""

    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor) -> None:
        self.mu, self.sigma = mu, sigma

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        z = (action - self.mu) / self.sigma
        return (-0.5 * z * z - self.sigma.log() - _HALF_LOG_2PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (0.5 + _HALF_LOG_2PI + self.sigma.log()).sum(-1)


def action_distribution(logit: Any) -> CategoricalDist | DiagGaussianDist:
    """``CategoricalDist`` over (B, A) logits, or ``DiagGaussianDist`` for a ``{'mu', 'sigma'}`` dict."""
    if isinstance(logit, torch.Tensor):
        return CategoricalDist(logit)
    if isinstance(logit, dict) and "mu" in logit and "sigma" in logit:
        return DiagGaussianDist(logit["mu"], logit["sigma"])
    got = sorted(logit) if isinstance(logit, dict) else type(logit).__name__
    raise TypeError(f"action_distribution: expected (B, A) logits or a dict with 'mu' and 'sigma', got {got}")
