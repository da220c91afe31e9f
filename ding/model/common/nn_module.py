"""Small building blocks: fully connected layers with optional normalisation, and MLP stacks."""
from __future__ import annotations

from typing import Sequence

import torch.nn as nn

NORM_TYPES = ("BN", "LN")


def build_normalization(norm_type: str, dim: int, where: str = "norm_type") -> nn.Module:
    """``'BN'`` -> BatchNorm1d, ``'LN'`` -> LayerNorm over the last ``dim`` features."""
    if norm_type == "BN":
        return nn.BatchNorm1d(dim)
    if norm_type == "LN":
        return nn.LayerNorm(dim)
    raise ValueError(f"{where}: unknown normalisation {norm_type!r}; use None or one of {NORM_TYPES}")


def fc_block(
    in_dim: int, out_dim: int, activation: nn.Module | None = None, norm_type: str | None = None
) -> list[nn.Module]:
    """Layers of one fully connected block: Linear [-> norm] [-> activation]."""
    layers: list[nn.Module] = [nn.Linear(in_dim, out_dim)]
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
) -> nn.Sequential:
    """``in_dim -> hidden_sizes[0] -> ... -> hidden_sizes[-1]`` with an activation after each hidden layer, then an
    optional plain Linear to ``out_dim`` (no activation: e.g. Q-values or logits)."""
    act = activation if activation is not None else nn.ReLU()
    layers: list[nn.Module] = []
    dim = in_dim
    for size in hidden_sizes:
        layers += fc_block(dim, size, act, norm_type)
        dim = size
    if out_dim is not None:
        layers.append(nn.Linear(dim, out_dim))
    return nn.Sequential(*layers)
