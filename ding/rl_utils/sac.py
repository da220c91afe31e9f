"""SAC's pieces: the tanh-squashed Gaussian policy with its log-probability, and the temperature loss."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def squashed_gaussian_sample(mu: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterised sample ``a = tanh(u)``, ``u ~ N(mu, sigma)``, and its log-density ``log pi(a)``.

    ``mu``, ``sigma``: (B, A). Returns ``(action (B, A) in (-1, 1), log_prob (B,))``. The density of ``a`` is the
    Gaussian density of ``u`` divided by the tanh Jacobian: ``log pi(a) = sum_j [log N(u_j; mu_j, sigma_j) -
    log(1 - tanh(u_j)^2)]``, with ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))`` (exact, and finite for any
    ``u``, unlike ``log(1 - a^2 + eps)``). Noise comes from torch's global RNG; gradients flow into ``mu`` and
    ``sigma``.
    """
    eps = torch.randn_like(mu)
    u = mu + sigma * eps
    log_prob = -0.5 * eps.pow(2) - sigma.log() - _LOG_SQRT_2PI  # log N(u; mu, sigma), as (u - mu) / sigma = eps
    log_prob = log_prob - 2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))
    return torch.tanh(u), log_prob.sum(-1)


def squashed_gaussian_mode(mu: torch.Tensor) -> torch.Tensor:
    """The deterministic action of the squashed Gaussian (eval mode): ``tanh(mu)``."""
    return torch.tanh(mu)


def sac_temperature_loss(log_alpha: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """``-log_alpha * mean(log_prob + target_entropy)``: its gradient step raises alpha when the policy's entropy
    (``-mean(log_prob)``) is below ``target_entropy`` and lowers it when above. ``log_prob`` is detached."""
    return -(log_alpha * (log_prob.detach() + target_entropy).mean()).sum()
