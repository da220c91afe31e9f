"""Q-network for discrete actions (DQN, double / dueling)."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, one_of, shape, sizes
from ding.utils import MODEL_REGISTRY

from ..common import ConvEncoder, DiscreteHead, DuelingHead, FCEncoder
from ..common.nn_module import NORM_TYPES


def as_shape(shape: int | Sequence[int], what: str) -> tuple[int, ...]:
    """Normalise an int or a sequence of ints into a tuple."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        return (shape,)
    if isinstance(shape, (str, bytes)):
        raise ValueError(f"{what}: expected an int or a list of ints, got {type(shape).__name__} {shape!r}")
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"{what}: expected an int or a list of ints, got {shape!r}") from None
    if not out:
        raise ValueError(f"{what}: got an empty shape")
    return out


def build_encoder(
    obs_shape: tuple[int, ...], hidden_size_list: Sequence[int], activation: nn.Module | None, norm_type: str | None
) -> FCEncoder | ConvEncoder:
    """FCEncoder for 1-d observations, ConvEncoder for (C, H, W) images."""
    if len(obs_shape) == 1:
        return FCEncoder(obs_shape[0], hidden_size_list, activation, norm_type)
    if len(obs_shape) == 3:
        return ConvEncoder(obs_shape, hidden_size_list, activation, norm_type=norm_type)
    raise ValueError(f"obs_shape {obs_shape}: use an int (vector observations) or (C, H, W) (images)")


@MODEL_REGISTRY.register("dqn")
class DQN(nn.Module):
    """Encoder + (dueling) Q head; ``forward(obs) -> {'logit': (B, n_actions)}`` Q-values."""

    # Allowed values of the keyword arguments (policy.model.*), checked by create_model (ding/config/ranges.py).
    config_ranges = {
        "obs_shape": shape(),
        "action_shape": shape(),
        "encoder_hidden_size_list": sizes(),
        "head_hidden_size": at_least(1, integer=True),
        "head_layer_num": at_least(0, integer=True),
        "norm_type": one_of(*NORM_TYPES),
    }

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        dueling: bool = True,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        self.obs_shape = as_shape(obs_shape, "DQN obs_shape")
        action = as_shape(action_shape, "DQN action_shape")
        if len(action) != 1:
            raise ValueError(f"DQN action_shape {action}: only a single discrete action dimension is supported")
        self.action_shape = action[0]
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        head_cls = DuelingHead if dueling else DiscreteHead
        self.head = head_cls(
            head_hidden_size or self.encoder.output_size,
            self.action_shape,
            layer_num=head_layer_num,
            activation=activation,
            norm_type=norm_type,
            input_size=self.encoder.output_size,
        )

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.head(self.encoder(x))
