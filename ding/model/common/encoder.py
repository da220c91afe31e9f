"""Observation encoders: an MLP for vector observations and a conv net for images (the Nature CNN by default)."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn

from ding.torch_utils.data_helper import obs_to_float

from .nn_module import mlp

# The DQN Nature paper's network (Mnih et al. 2015) on (4, 84, 84) frames: conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1,
# then a 512-unit layer. The models use it for image observations when no encoder_hidden_size_list is given.
NATURE_CNN_SIZES = (32, 64, 64, 512)


class FCEncoder(nn.Module):
    """MLP encoder for flat observations; output size ``hidden_size_list[-1]``."""

    def __init__(
        self,
        obs_shape: int,
        hidden_size_list: Sequence[int] = (128, 128, 64),
        activation: nn.Module | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        if len(hidden_size_list) == 0:
            raise ValueError("FCEncoder: hidden_size_list must name at least one layer size")
        self.obs_shape = int(obs_shape)
        self.output_size = int(hidden_size_list[-1])
        self.main = mlp(self.obs_shape, hidden_size_list, activation, norm_type)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x)


class ConvEncoder(nn.Module):
    """Conv encoder for (C, H, W) image observations: conv layers, flatten, then one Linear to
    ``hidden_size_list[-1]``.

    ``hidden_size_list[:-1]`` are the conv channels, with matching ``kernel_size`` and ``stride`` lists (default:
    the Atari "Nature" layout 8/4, 4/2, 3/1, then 3/1 for any further layer). uint8 inputs are pixels: they are
    scaled to [0, 1] (``/255``) on the module's device; float inputs are used as they are.
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        hidden_size_list: Sequence[int] = NATURE_CNN_SIZES,
        activation: nn.Module | None = None,
        kernel_size: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f"ConvEncoder: obs_shape must be (C, H, W), got {tuple(obs_shape)}")
        n_conv = len(hidden_size_list) - 1
        kernel_size = tuple(kernel_size) if kernel_size is not None else ((8, 4) + (3,) * n_conv)[:n_conv]
        stride = tuple(stride) if stride is not None else ((4, 2) + (1,) * n_conv)[:n_conv]
        padding = tuple(padding) if padding is not None else (0,) * n_conv
        if n_conv < 1 or not (len(kernel_size) == len(stride) == len(padding) == n_conv):
            raise ValueError(
                f"ConvEncoder: hidden_size_list {tuple(hidden_size_list)} gives {n_conv} conv layers, but "
                f"kernel_size {kernel_size}, stride {stride} and padding {padding} must have "
                f"one entry per conv layer"
            )
        if norm_type not in (None, "BN"):
            raise ValueError(f"ConvEncoder: norm_type {norm_type!r} is not supported for conv layers; use None or 'BN'")
        act = activation if activation is not None else nn.ReLU()
        layers: list[nn.Module] = []
        channels = int(obs_shape[0])
        for out_ch, k, s, p in zip(hidden_size_list[:-1], kernel_size, stride, padding):
            layers.append(nn.Conv2d(channels, out_ch, k, s, p))
            if norm_type == "BN":
                layers.append(nn.BatchNorm2d(out_ch))
            layers.append(act)
            channels = out_ch
        layers.append(nn.Flatten())
        self.conv = nn.Sequential(*layers)
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, *obs_shape)).shape[1]
        self.output_size = int(hidden_size_list[-1])
        self.fc = nn.Sequential(nn.Linear(flat, self.output_size), act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(obs_to_float(x)))


class NatureCNN(ConvEncoder):
    """The Nature DQN encoder (:data:`NATURE_CNN_SIZES`; ``output_size`` 512) for ``(frames, 84, 84)`` inputs."""

    def __init__(self, obs_shape: Sequence[int], activation: nn.Module | None = None) -> None:
        super().__init__(obs_shape, NATURE_CNN_SIZES, activation)
