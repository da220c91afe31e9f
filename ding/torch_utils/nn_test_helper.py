"""DI-engine's ``is_differentiable``: a test helper that a loss reaches every parameter of a model."""
from __future__ import annotations

from collections.abc import Sequence

import torch


def is_differentiable(loss: torch.Tensor, model: torch.nn.Module | Sequence[torch.nn.Module],
                      print_instead: bool = False) -> None:
    """Backpropagate ``loss`` once and check every parameter of ``model`` (or of each model in a list) got a
    gradient; raises AssertionError naming the first one that did not (``print_instead``: print every parameter's
    status and raise nothing). The parameters must have no gradient before."""
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"is_differentiable: loss must be a tensor, got {type(loss).__name__}")
    models = list(model) if isinstance(model, Sequence) else [model]
    for m in models:
        for name, p in m.named_parameters():
            if p.grad is not None:
                raise AssertionError(f"is_differentiable: parameter {name!r} already has a gradient; zero_grad first")
    loss.backward()
    for m in models:
        for name, p in m.named_parameters():
            if print_instead:
                print(f"{name}: {'grad' if isinstance(p.grad, torch.Tensor) else 'no grad'}")
            elif not isinstance(p.grad, torch.Tensor):
                raise AssertionError(f"is_differentiable: parameter {name!r} of {type(m).__name__} got no gradient")
