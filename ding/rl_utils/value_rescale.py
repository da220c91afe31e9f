"""Invertible value rescaling ``h`` (Pohlen et al. 2018), used by R2D2 to keep large returns in a learnable range."""
from __future__ import annotations

import torch


def value_transform(x: torch.Tensor, eps: float = 1e-2) -> torch.Tensor:
    """``h(x) = sign(x) * (sqrt(|x| + 1) - 1) + eps * x``."""
    return torch.sign(x) * (torch.sqrt(torch.abs(x) + 1) - 1) + eps * x


def value_inv_transform(x: torch.Tensor, eps: float = 1e-2) -> torch.Tensor:
    """``h^-1(x) = sign(x) * (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)``, the exact inverse of
    :func:`value_transform`."""
    root = (torch.sqrt(1 + 4 * eps * (torch.abs(x) + 1 + eps)) - 1) / (2 * eps)
    return torch.sign(x) * (root * root - 1)


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(|x| + 1)`` (DreamerV3's target squashing)."""
    return torch.sign(x) * torch.log(torch.abs(x) + 1)


def inv_symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * (exp(|x|) - 1)``, the inverse of :func:`symlog`."""
    return torch.sign(x) * (torch.exp(torch.abs(x)) - 1)
