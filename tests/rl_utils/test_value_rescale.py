"""Value rescaling h and its inverse (R2D2)."""
from __future__ import annotations

import torch

from ding.rl_utils import value_inv_transform, value_transform


def test_h_on_hand_computed_values():
    x = torch.tensor([0.0, 3.0, -8.0, 99.0])
    # sign(x) (sqrt(|x| + 1) - 1) + 0.01 x
    assert torch.allclose(value_transform(x), torch.tensor([0.0, 1.03, -2.08, 9.99]))


def test_inverse_on_hand_computed_values():
    assert torch.allclose(value_inv_transform(torch.tensor([0.0, 1.03, -2.08, 9.99])),
                          torch.tensor([0.0, 3.0, -8.0, 99.0]), atol=1e-4)


def test_inverse_undoes_h_over_a_wide_range():
    x = torch.linspace(-1e4, 1e4, 2001, dtype=torch.float64)
    assert torch.allclose(value_inv_transform(value_transform(x)), x, rtol=1e-9, atol=1e-7)
    assert torch.allclose(value_transform(value_inv_transform(x)), x, rtol=1e-9, atol=1e-7)


def test_h_shrinks_large_values_and_keeps_order():
    x = torch.linspace(-500, 500, 101)
    y = value_transform(x)
    assert (y.diff() > 0).all() and y.abs().max() < 30
