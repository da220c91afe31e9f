"""The Nature CNN: the templates' default encoder for (4, 84, 84) frames, reading uint8 pixels as float / 255."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ding.model import C51DQN, DQN, DRQN, VAC, RainbowDQN
from ding.model.common import NatureCNN

FRAMES = [4, 84, 84]


def _conv_layout(encoder: nn.Module) -> list[tuple[int, int, int]]:
    return [(m.out_channels, m.kernel_size[0], m.stride[0]) for m in encoder.modules() if isinstance(m, nn.Conv2d)]


NATURE = [(32, 8, 4), (64, 4, 2), (64, 3, 1)]


@pytest.mark.parametrize("make", [
    lambda: DQN(FRAMES, 6), lambda: C51DQN(FRAMES, 6), lambda: RainbowDQN(FRAMES, 6), lambda: DRQN(FRAMES, 6),
    lambda: VAC(FRAMES, 6),
], ids=["dqn", "c51", "rainbow", "r2d2-drqn", "ppo-a2c-vac"])
def test_templates_build_the_nature_cnn_from_obs_shape_and_read_uint8(make):
    torch.manual_seed(0)
    model = make().eval()
    encoder = model.actor_encoder if isinstance(model, VAC) else model.encoder
    assert _conv_layout(encoder) == NATURE and encoder.output_size == 512
    pixels = torch.randint(0, 256, (2, *FRAMES), dtype=torch.uint8)
    with torch.no_grad():
        if isinstance(model, VAC):
            a, b = model(pixels, "compute_actor_critic"), model(pixels.float() / 255, "compute_actor_critic")
            assert a["logit"].shape == (2, 6) and torch.allclose(a["logit"], b["logit"])
        else:
            torch.manual_seed(1)  # Rainbow's noisy layers draw noise per call: the same draw for both
            a = model(pixels)
            torch.manual_seed(1)
            b = model(pixels.float() / 255)
            assert a["logit"].shape == (2, 6) and torch.allclose(a["logit"], b["logit"])


def test_nature_cnn_features_and_di_engine_layouts():
    enc = NatureCNN(FRAMES)
    assert enc(torch.zeros(3, *FRAMES, dtype=torch.uint8)).shape == (3, 512)
    # DI-engine's pong_dqn_config.py gives encoder_hidden_size_list=[128, 128, 512]: two conv layers, then 512
    dqn = DQN(FRAMES, 6, encoder_hidden_size_list=[128, 128, 512])
    assert _conv_layout(dqn.encoder) == [(128, 8, 4), (128, 4, 2)] and dqn.encoder.output_size == 512
    # vector observations keep the MLP default
    assert DQN(4, 2).encoder.output_size == 64
