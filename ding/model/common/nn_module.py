"""Small building blocks: fully connected layers with optional normalisation, MLP stacks, and noisy linear layers."""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

NORM_TYPES = ("BN", "LN")


def build_normalization(norm_type: str, dim: int, where: str = "norm_type") -> nn.Module:
    """``'BN'`` -> BatchNorm1d, ``'LN'`` -> LayerNorm over the last ``dim`` features."""
    if norm_type == "BN":
        return nn.BatchNorm1d(dim)
    if norm_type == "LN":
        return nn.LayerNorm(dim)
    raise ValueError(f"{where}: unknown normalisation {norm_type!r}; use None or one of {NORM_TYPES}")


def fc_block(
    in_dim: int, out_dim: int, activation: nn.Module | None = None, norm_type: str | None = None,
    linear: Callable[[int, int], nn.Module] = nn.Linear,
) -> list[nn.Module]:
    """Layers of one fully connected block: Linear (or ``linear(in_dim, out_dim)``) [-> norm] [-> activation]."""
    layers: list[nn.Module] = [linear(in_dim, out_dim)]
    if norm_type is not None:
        layers.append(build_normalization(norm_type, out_dim))
    if activation is not None:
        layers.append(activation)
    return layers


def mlp(
    in_dim: int,
    hidden_sizes: Sequence[int],
    activation: nn.Module | None = None,
    norm_type: str | None = None,
    out_dim: int | None = None,
    linear: Callable[[int, int], nn.Module] = nn.Linear,
    dropout: float | None = None,
) -> nn.Sequential:
    """``in_dim -> hidden_sizes[0] -> ... -> hidden_sizes[-1]`` with an activation (and ``dropout``, if given) after
    each hidden layer, then an optional plain Linear to ``out_dim`` (no activation: e.g. Q-values or logits).
    ``linear`` builds every linear layer (e.g. :class:`NoisyLinear`)."""
    act = activation if activation is not None else nn.ReLU()
    layers: list[nn.Module] = []
    dim = in_dim
    for size in hidden_sizes:
        layers += fc_block(dim, size, act, norm_type, linear)
        if dropout is not None:
            layers.append(nn.Dropout(dropout))
        dim = size
    if out_dim is not None:
        layers.append(linear(dim, out_dim))
    return nn.Sequential(*layers)


class NoisyLinear(nn.Module):
    """Linear layer with factorised Gaussian noise (Fortunato et al., "Noisy Networks for Exploration").

    ``y = (mu_w + sigma_w * f(e_out) f(e_in)^T) x + mu_b + sigma_b * f(e_out)`` with ``f(e) = sign(e) sqrt(|e|)`` and
    fresh ``e_in``, ``e_out`` from torch's global RNG at every forward while ``noise_enabled`` (the default). With
    noise disabled (:func:`set_noise`) it is the plain linear layer ``mu_w x + mu_b``. The switch is independent of
    ``train()`` / ``eval()``: a policy turns noise on to learn and collect and off to evaluate.
    """

    def __init__(self, in_features: int, out_features: int, sigma0: float = 0.5) -> None:
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.noise_enabled = True
        bound = 1.0 / math.sqrt(in_features)
        with torch.no_grad():
            self.weight_mu.uniform_(-bound, bound)
            self.bias_mu.uniform_(-bound, bound)
            self.weight_sigma.fill_(sigma0 * bound)
            self.bias_sigma.fill_(sigma0 * bound)

    @staticmethod
    def _scaled_noise(size: int, like: torch.Tensor) -> torch.Tensor:
        e = torch.randn(size, dtype=like.dtype, device=like.device)
        return e.sign() * e.abs().sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.noise_enabled:
            return F.linear(x, self.weight_mu, self.bias_mu)
        e_in = self._scaled_noise(self.in_features, self.weight_mu)
        e_out = self._scaled_noise(self.out_features, self.weight_mu)
        weight = self.weight_mu + self.weight_sigma * torch.outer(e_out, e_in)
        return F.linear(x, weight, self.bias_mu + self.bias_sigma * e_out)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, noise={self.noise_enabled}"


def set_noise(module: nn.Module, enabled: bool) -> int:
    """Turn the noise of every :class:`NoisyLinear` inside ``module`` on or off; return how many there are."""
    layers = [m for m in module.modules() if isinstance(m, NoisyLinear)]
    for layer in layers:
        layer.noise_enabled = bool(enabled)
    return len(layers)
