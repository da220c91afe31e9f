"""DI-engine's ``ding.torch_utils`` conversions and gradient helpers: container conversions, ``is_differentiable``,
and the ``ding.torch_utils.loss`` path."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding.torch_utils import (
    calculate_grad_norm,
    get_null_data,
    get_tensor_data,
    is_differentiable,
    same_shape,
    tensor_to_list,
    to_item,
    to_list,
)
from ding.torch_utils.optimizer_helper import calculate_grad_norm_without_bias_two_norm


def test_to_list_tensor_to_list_and_to_item():
    data = {"t": torch.tensor([1.0, 2.0]), "a": np.array([3, 4]), "l": (5, torch.tensor([6])), "s": "x", "n": None}
    assert to_list(data) == {"t": [1.0, 2.0], "a": [3, 4], "l": [5, [6]], "s": "x", "n": None}
    assert tensor_to_list({"t": torch.tensor([[1, 2]])}) == {"t": [[1, 2]]}
    with pytest.raises(TypeError, match="tensor_to_list: unsupported item type ndarray"):
        tensor_to_list(np.zeros(2))
    assert to_item({"a": torch.tensor([1.5]), "b": np.array(2), "big": torch.zeros(3)}) == {"a": 1.5, "b": 2}
    with pytest.raises((ValueError, RuntimeError)):
        to_item({"big": torch.zeros(3)}, ignore_error=False)


def test_same_shape_tensor_data_and_null_data():
    assert same_shape([torch.zeros(2, 3), torch.ones(2, 3)]) and not same_shape([torch.zeros(2), torch.zeros(3)])
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out = get_tensor_data({"x": x * 2, "l": [x], "n": None})
    assert not out["x"].requires_grad and torch.equal(out["x"], torch.tensor([2.0, 4.0])) and out["n"] is None
    null = get_null_data({"obs": torch.ones(2), "reward": torch.tensor([3.0]), "done": False}, 2)
    assert len(null) == 2 and all(d["null"] and d["done"] and d["reward"].sum() == 0 for d in null)


def test_is_differentiable_finds_a_parameter_without_gradient():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
    is_differentiable(model(torch.randn(2, 3)).sum(), model)
    assert all(p.grad is not None for p in model.parameters())
    frozen = torch.nn.Linear(3, 1)
    unused = torch.nn.Linear(3, 1)
    with pytest.raises(AssertionError, match="got no gradient"):
        is_differentiable(frozen(torch.randn(2, 3)).sum(), [frozen, unused])
    with pytest.raises(AssertionError, match="already has a gradient"):
        is_differentiable(model(torch.randn(2, 3)).sum(), model)


def test_calculate_grad_norm():
    model = torch.nn.Linear(2, 1)
    assert calculate_grad_norm(model) == 0.0
    model.weight.grad = torch.tensor([[3.0, 0.0]])
    model.bias.grad = torch.tensor([4.0])
    assert calculate_grad_norm(model) == pytest.approx(5.0)
    assert calculate_grad_norm(model, "inf") == pytest.approx(4.0)
    assert calculate_grad_norm(model, 1) == pytest.approx(7.0)
    assert calculate_grad_norm_without_bias_two_norm(model) == pytest.approx(3.0)


def test_loss_package_path():
    from ding.torch_utils import ContrastiveLoss
    from ding.torch_utils.loss import ContrastiveLoss as FromLoss
    from ding.torch_utils.loss.contrastive_loss import ContrastiveLoss as FromModule

    assert FromLoss is ContrastiveLoss is FromModule
