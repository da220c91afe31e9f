"""``ContrastiveLoss``: an InfoNCE loss between two views of the same samples (DI-engine's name and arguments)."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F


class ContrastiveLoss(nn.Module):
    """Encodes ``x`` and ``y`` (vectors of size ``x_size`` / ``y_size``, or images ``(C, H, W)``) into ``heads``
    embeddings of ``encode_shape`` each; for every pair of heads, sample ``i``'s x-embedding must pick out its own
    y-embedding among the batch's (cross-entropy over ``temperature``-scaled dot products). ``forward(x, y)`` returns
    the mean loss (a scalar tensor)."""

    def __init__(self, x_size: int | Sequence[int], y_size: int | Sequence[int], heads: Sequence[int] = (1, 1),
                 encode_shape: int = 64, loss_type: str = "infoNCE", temperature: float = 1.0) -> None:
        super().__init__()
        if len(heads) != 2:
            raise ValueError(f"ContrastiveLoss: heads must be two numbers (x heads, y heads), got {list(heads)}")
        if loss_type.lower() != "infonce":
            raise ValueError(f"ContrastiveLoss: loss_type must be 'infoNCE', got {loss_type!r}")
        self._heads = (int(heads[0]), int(heads[1]))
        self._encode_shape = int(encode_shape)
        self._temperature = float(temperature)
        self._x_encoder = self._encoder(x_size, self._heads[0])
        self._y_encoder = self._encoder(y_size, self._heads[1])

    def _encoder(self, size: int | Sequence[int], heads: int) -> nn.Module:
        shape = [size] if isinstance(size, int) else list(size)
        out = self._encode_shape * heads
        if len(shape) == 1:
            return nn.Sequential(nn.Linear(shape[0], 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                                 nn.Linear(128, out))
        if len(shape) == 3:
            return nn.Sequential(nn.Conv2d(shape[0], 32, 3, stride=2), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2),
                                 nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, out))
        raise ValueError(f"ContrastiveLoss: input size must be an int or (C, H, W), got {size!r}")

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        xe = self._x_encoder(x).view(n, self._heads[0], self._encode_shape)
        ye = self._y_encoder(y).view(n, self._heads[1], self._encode_shape)
        # scores[a, b, i, j] = <x_i (head a), y_j (head b)>
        scores = torch.einsum("iad,jbd->abij", xe, ye) * self._temperature
        target = torch.arange(n, device=x.device).expand(*scores.shape[:2], n)
        return F.cross_entropy(scores.reshape(-1, n), target.reshape(-1))
