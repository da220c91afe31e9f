"""DI-engine's optimizers: ``Adam`` and ``RMSprop`` with gradient clipping and gradient ignoring built in.

Before each ``step`` the gradients are first clipped (``grad_clip_type``), then checked (``grad_ignore_type``: a
step whose gradients fail the check is skipped, its gradients zeroed). Types, with ``clip_value`` /
``ignore_value`` as the threshold:

- ``'clip_value'``: each gradient entry clamped to ``[-clip_value, clip_value]``;
- ``'clip_norm'``: the total ``clip_norm_type``-norm scaled down to ``clip_value``;
- ``'clip_momentum'``: each entry clamped to ``+-clip_coef * sqrt(v)``, ``v`` a running (0.999) mean of the squared
  gradient, once ``clip_momentum_timestep`` steps have built it up;
- ``'clip_momentum_norm'``: the total norm scaled down to ``clip_coef * ||sqrt(v)||`` (same warm-up);
- ``'ignore_value'`` / ``'ignore_norm'``: skip the step when an entry's magnitude / the total norm exceeds
  ``ignore_value``; ``'ignore_momentum'`` / ``'ignore_momentum_norm'``: the same against ``ignore_coef * sqrt(v)``
  after ``ignore_momentum_timestep`` steps.

Both construct like torch's optimizers and add nothing to the state dict, so checkpoints load in plain torch.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

GRAD_CLIP_TYPES = (None, "clip_value", "clip_norm", "clip_momentum", "clip_momentum_norm")
GRAD_IGNORE_TYPES = (None, "ignore_value", "ignore_norm", "ignore_momentum", "ignore_momentum_norm")
_BETA = 0.999


class _GradControl:
    """The clip / ignore settings of one optimizer and the running second moment the momentum variants need."""

    def __init__(self, owner: str, grad_clip_type: str | None, clip_value: float | None, clip_coef: float,
                 clip_norm_type: float, clip_momentum_timestep: int, grad_norm_type: str | None,
                 grad_ignore_type: str | None, ignore_value: float | None, ignore_coef: float,
                 ignore_norm_type: float, ignore_momentum_timestep: int) -> None:
        if grad_clip_type not in GRAD_CLIP_TYPES:
            raise ValueError(f"{owner}: grad_clip_type {grad_clip_type!r} is not one of {GRAD_CLIP_TYPES}")
        if grad_ignore_type not in GRAD_IGNORE_TYPES:
            raise ValueError(f"{owner}: grad_ignore_type {grad_ignore_type!r} is not one of {GRAD_IGNORE_TYPES}")
        if grad_norm_type is not None:
            raise ValueError(f"{owner}: grad_norm_type must be None (DI-engine defines no other), got "
                             f"{grad_norm_type!r}")
        if grad_clip_type in ("clip_value", "clip_norm") and clip_value is None:
            raise ValueError(f"{owner}: grad_clip_type={grad_clip_type!r} needs clip_value")
        if grad_ignore_type in ("ignore_value", "ignore_norm") and ignore_value is None:
            raise ValueError(f"{owner}: grad_ignore_type={grad_ignore_type!r} needs ignore_value")
        self.clip_type, self.clip_value, self.clip_coef = grad_clip_type, clip_value, float(clip_coef)
        self.clip_norm_type, self.clip_warmup = float(clip_norm_type), int(clip_momentum_timestep)
        self.ignore_type, self.ignore_value, self.ignore_coef = grad_ignore_type, ignore_value, float(ignore_coef)
        self.ignore_norm_type, self.ignore_warmup = float(ignore_norm_type), int(ignore_momentum_timestep)
        self.needs_moment = bool(grad_clip_type and "momentum" in grad_clip_type) or \
            bool(grad_ignore_type and "momentum" in grad_ignore_type)
        self.moment: dict[torch.Tensor, torch.Tensor] = {}
        self.steps = 0

    def apply(self, params: list[torch.Tensor]) -> bool:
        """Clip the gradients in place; False when the step must be skipped (its gradients are then zero)."""
        pairs = [(p, p.grad) for p in params if p.grad is not None]
        if not pairs:
            return True
        if self.needs_moment:
            self.steps += 1
            for p, g in pairs:
                m = self.moment.get(p)
                g2 = g.detach() ** 2
                self.moment[p] = g2.clone() if m is None else m.mul_(_BETA).add_(g2, alpha=1 - _BETA)
        grads = [g for _, g in pairs]
        bounds = [self.moment[p].sqrt() for p, _ in pairs] if self.needs_moment else []
        self._clip(grads, bounds)
        if self._keep(grads, bounds):
            return True
        for g in grads:
            g.zero_()
        return False

    def _clip(self, grads: list[torch.Tensor], roots: list[torch.Tensor]) -> None:
        t = self.clip_type
        if t == "clip_value":
            limit = float(self.clip_value or 0.0)
            for g in grads:
                g.clamp_(-limit, limit)
        elif t == "clip_norm":
            _scale_to_norm(grads, float(self.clip_value or 0.0), self.clip_norm_type)
        elif t == "clip_momentum" and self.steps >= self.clip_warmup:
            for g, root in zip(grads, roots):
                bound = self.clip_coef * root
                g.copy_(torch.maximum(torch.minimum(g, bound), -bound))
        elif t == "clip_momentum_norm" and self.steps >= self.clip_warmup:
            _scale_to_norm(grads, self.clip_coef * _total_norm(roots, self.clip_norm_type), self.clip_norm_type)

    def _keep(self, grads: list[torch.Tensor], roots: list[torch.Tensor]) -> bool:
        t = self.ignore_type
        if t is None:
            return True
        if t == "ignore_value":
            return not any(bool((g.abs() > float(self.ignore_value or 0.0)).any()) for g in grads)
        if t == "ignore_norm":
            return _total_norm(grads, self.ignore_norm_type) <= float(self.ignore_value or 0.0)
        if self.steps < self.ignore_warmup:
            return True
        if t == "ignore_momentum":
            return not any(bool((g.abs() > self.ignore_coef * root).any()) for g, root in zip(grads, roots))
        limit = self.ignore_coef * _total_norm(roots, self.ignore_norm_type)
        return _total_norm(grads, self.ignore_norm_type) <= limit


def _scale_to_norm(grads: list[torch.Tensor], max_norm: float, norm_type: float) -> None:
    """Scale the gradients down so that their total ``norm_type``-norm is at most ``max_norm``."""
    total = _total_norm(grads, norm_type)
    if total > max_norm:
        factor = max_norm / (total + 1e-6)
        for g in grads:
            g.mul_(factor)


def _total_norm(tensors: list[torch.Tensor], norm_type: float) -> float:
    return float(torch.norm(torch.stack([torch.norm(t.detach(), norm_type) for t in tensors]), norm_type))


def _params_of(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


class Adam(torch.optim.Adam):
    """``torch.optim.Adam`` plus DI-engine's options: ``optim_type`` ``'adam'`` or ``'adamw'`` (decoupled weight
    decay) and the gradient clip / ignore settings described in this module."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, optim_type: str = "adam",
                 grad_clip_type: str | None = None, clip_value: float | None = None, clip_coef: float = 5,
                 clip_norm_type: float = 2.0, clip_momentum_timestep: int = 100, grad_norm_type: str | None = None,
                 grad_ignore_type: str | None = None, ignore_value: float | None = None, ignore_coef: float = 5,
                 ignore_norm_type: float = 2.0, ignore_momentum_timestep: int = 100) -> None:
        if optim_type not in ("adam", "adamw"):
            raise ValueError(f"Adam: optim_type must be 'adam' or 'adamw', got {optim_type!r}")
        self._optim_type = optim_type
        self._decoupled_decay = float(weight_decay) if optim_type == "adamw" else 0.0
        super().__init__(params, lr=lr, betas=betas, eps=eps, amsgrad=amsgrad,
                         weight_decay=0.0 if optim_type == "adamw" else weight_decay)
        self._grad_control = _GradControl("Adam", grad_clip_type, clip_value, clip_coef, clip_norm_type,
                                          clip_momentum_timestep, grad_norm_type, grad_ignore_type, ignore_value,
                                          ignore_coef, ignore_norm_type, ignore_momentum_timestep)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if not self._grad_control.apply(_params_of(self)):
            return loss
        if self._decoupled_decay:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.mul_(1.0 - group["lr"] * self._decoupled_decay)
        super().step()
        return loss


class RMSprop(torch.optim.RMSprop):
    """``torch.optim.RMSprop`` plus the gradient clip / ignore settings described in this module."""

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 grad_clip_type: str | None = None, clip_value: float | None = None, clip_coef: float = 5,
                 clip_norm_type: float = 2.0, clip_momentum_timestep: int = 100, grad_norm_type: str | None = None,
                 grad_ignore_type: str | None = None, ignore_value: float | None = None, ignore_coef: float = 5,
                 ignore_norm_type: float = 2.0, ignore_momentum_timestep: int = 100) -> None:
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered)
        self._grad_control = _GradControl("RMSprop", grad_clip_type, clip_value, clip_coef, clip_norm_type,
                                          clip_momentum_timestep, grad_norm_type, grad_ignore_type, ignore_value,
                                          ignore_coef, ignore_norm_type, ignore_momentum_timestep)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if not self._grad_control.apply(_params_of(self)):
            return loss
        super().step()
        return loss


def calculate_grad_norm(model: torch.nn.Module, norm_type: float | str = 2) -> float:
    """The ``norm_type``-norm (or 'inf') of all the gradients of ``model``'s parameters taken together (parameters
    without a gradient are left out; 0 when none has one)."""
    grads = [p.grad.detach() for p in model.parameters() if p.grad is not None]
    if not grads:
        return 0.0
    if norm_type in ("inf", float("inf")):
        return float(max(g.abs().max() for g in grads))
    norm = float(norm_type)
    return float(sum(g.norm(norm).item() ** norm for g in grads) ** (1.0 / norm))


def calculate_grad_norm_without_bias_two_norm(model: torch.nn.Module) -> float:
    """The 2-norm of the gradients of ``model``'s parameters whose name has no 'bias'."""
    grads = [p.grad.detach() for name, p in model.named_parameters() if p.grad is not None and "bias" not in name]
    return float(sum(g.norm(2).item() ** 2 for g in grads) ** 0.5) if grads else 0.0
