"""Observation encoders: an MLP for vector observations, a conv net for images (the Nature CNN by default), IMPALA's
residual conv net, and a Gaussian Fourier time embedding (for diffusion-style models)."""
from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn as nn

from ding.torch_utils.data_helper import obs_to_float

from .nn_module import fc_block, mlp

# The DQN Nature paper's network (Mnih et al. 2015) on (4, 84, 84) frames: conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1,
# then a 512-unit layer. The models use it for image observations when no encoder_hidden_size_list is given.
NATURE_CNN_SIZES = (32, 64, 64, 512)


class FCEncoder(nn.Module):
    """MLP encoder for flat observations; output size ``hidden_size_list[-1]``.

    ``res_block=True`` (DI-engine's option): one Linear to the hidden size, then ``len(hidden_size_list)`` residual
    blocks of two layers each (all sizes in the list must then be equal). ``dropout`` follows each hidden layer.
    """

    def __init__(
        self,
        obs_shape: int,
        hidden_size_list: Sequence[int] = (128, 128, 64),
        res_block: bool = False,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        dropout: float | None = None,
    ) -> None:
        super().__init__()
        if len(hidden_size_list) == 0:
            raise ValueError("FCEncoder: hidden_size_list must name at least one layer size")
        self.obs_shape = int(obs_shape)
        self.output_size = int(hidden_size_list[-1])
        if not res_block:
            self.main = mlp(self.obs_shape, hidden_size_list, activation, norm_type, dropout=dropout)
            return
        if len(set(hidden_size_list)) != 1:
            raise ValueError(f"FCEncoder: res_block=True needs one hidden size throughout (a residual block keeps its "
                             f"width), got hidden_size_list {list(hidden_size_list)}")
        width = self.output_size
        act = activation if activation is not None else nn.ReLU()
        self.main = nn.Sequential(nn.Linear(self.obs_shape, width), act,
                                  *(ResFCBlock(width, act, norm_type, dropout) for _ in hidden_size_list))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x)


class ResFCBlock(nn.Module):
    """``act(x + fc2(act(fc1(x))))`` at a constant width (optional norm after each Linear, dropout at the end)."""

    def __init__(self, width: int, activation: nn.Module | None = None, norm_type: str | None = None,
                 dropout: float | None = None) -> None:
        super().__init__()
        self.act = activation if activation is not None else nn.ReLU()
        self.fc1 = nn.Sequential(*fc_block(width, width, self.act, norm_type))
        self.fc2 = nn.Sequential(*fc_block(width, width, None, norm_type))
        self.dropout = nn.Dropout(dropout) if dropout is not None else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.act(x + self.fc2(self.fc1(x))))


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


def _normed(layer: nn.Conv2d | nn.Linear, scale: float) -> nn.Module:
    """``layer`` with each output unit's weights rescaled to norm ``scale`` and zero biases (IMPALA's init)."""
    with torch.no_grad():
        w = layer.weight
        w.mul_(scale / w.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *([1] * (w.dim() - 1))))
        if layer.bias is not None:
            layer.bias.zero_()
    return layer


class IMPALAResidualBlock(nn.Module):
    """``x + conv(relu(conv(relu(x))))`` with 3x3 convs keeping the channels and the size (optional batch norm)."""

    def __init__(self, channels: int, scale: float = 1.0, batch_norm: bool = False) -> None:
        super().__init__()
        s = math.sqrt(scale)
        self.conv0 = _normed(nn.Conv2d(channels, channels, 3, padding=1), s)
        self.conv1 = _normed(nn.Conv2d(channels, channels, 3, padding=1), s)
        self.bn0: nn.Module = nn.BatchNorm2d(channels) if batch_norm else nn.Identity()
        self.bn1: nn.Module = nn.BatchNorm2d(channels) if batch_norm else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv0(torch.relu(self.bn0(x)))
        return x + self.conv1(torch.relu(self.bn1(h)))


class IMPALADownStack(nn.Module):
    """A 3x3 conv to ``out_channels``, a 3x3 stride-2 max-pool (halving H and W, rounding up), ``nblock`` residual
    blocks."""

    def __init__(self, in_channels: int, nblock: int, out_channels: int, scale: float = 1.0, pool: bool = True,
                 batch_norm: bool = False) -> None:
        super().__init__()
        self.in_channels, self.out_channels, self.pool = in_channels, out_channels, pool
        self.firstconv = _normed(nn.Conv2d(in_channels, out_channels, 3, padding=1), 1.0)
        block_scale = scale / math.sqrt(nblock)
        self.blocks = nn.Sequential(*(IMPALAResidualBlock(out_channels, block_scale, batch_norm)
                                      for _ in range(nblock)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.firstconv(x)
        if self.pool:
            x = nn.functional.max_pool2d(x, kernel_size=3, stride=2, padding=1)
        return self.blocks(x)

    def output_shape(self, in_shape: Sequence[int]) -> tuple[int, int, int]:
        _, h, w = in_shape
        return (self.out_channels, (h + 1) // 2, (w + 1) // 2) if self.pool else (self.out_channels, h, w)


class IMPALAConvEncoder(nn.Module):
    """IMPALA's residual conv encoder (Espeholt et al. 2018) for (C, H, W) images: one down-sampling stack per entry
    of ``channels``, then a Linear to ``outsize`` (ReLU after it when ``final_relu``).

    Inputs are divided by ``scale_ob`` (255: raw pixels to [0, 1]). ``batch_norm=True`` adds batch norm in the
    residual blocks.
    """

    def __init__(self, obs_shape: Sequence[int], channels: Sequence[int] = (16, 32, 32), outsize: int = 256,
                 scale_ob: float = 255.0, nblock: int = 2, final_relu: bool = True, batch_norm: bool = False) -> None:
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f"IMPALAConvEncoder: obs_shape must be (C, H, W), got {tuple(obs_shape)}")
        if len(channels) == 0 or nblock < 1:
            raise ValueError(f"IMPALAConvEncoder: needs at least one stack and one block per stack, got channels "
                             f"{tuple(channels)} and nblock {nblock}")
        self.scale_ob = float(scale_ob)
        self.final_relu = final_relu
        self.output_size = self.outsize = int(outsize)
        shape: Sequence[int] = tuple(int(d) for d in obs_shape)
        stacks = []
        for out_channels in channels:
            stack = IMPALADownStack(shape[0], nblock, int(out_channels), scale=1 / math.sqrt(len(channels)),
                                    batch_norm=batch_norm)
            shape = stack.output_shape(shape)
            stacks.append(stack)
        self.stacks = nn.Sequential(*stacks)
        self.dense = _normed(nn.Linear(math.prod(shape), self.outsize), 1.4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stacks(x.float() / self.scale_ob)
        h = self.dense(torch.relu(h.flatten(1)))
        return torch.relu(h) if self.final_relu else h


class GaussianFourierProjectionTimeEncoder(nn.Module):
    """Random Fourier features of a time step: ``t`` of shape (B,) -> ``[sin(2 pi w t), cos(2 pi w t)]`` of shape
    (B, ``embed_dim``), with fixed ``w ~ N(0, scale^2)`` drawn at construction (a buffer, not trained)."""

    def __init__(self, embed_dim: int, scale: float = 30.0) -> None:
        super().__init__()
        if embed_dim < 2 or embed_dim % 2:
            raise ValueError(f"GaussianFourierProjectionTimeEncoder: embed_dim must be an even int >= 2, got "
                             f"{embed_dim}")
        self.W: torch.Tensor
        self.register_buffer("W", torch.randn(embed_dim // 2) * scale * 2 * math.pi)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        proj = t[..., None] * self.W
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)
