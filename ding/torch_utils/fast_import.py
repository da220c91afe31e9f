"""Keep a training process from importing ``torch._dynamo`` just to build an optimizer.

torch wraps ``Optimizer.add_param_group``, ``zero_grad``, ``state_dict``, ``load_state_dict`` and the functional
optimizers in ``torch._disable_dynamo``, which imports ``torch._dynamo`` (a large import) the first time
one of them runs. That only matters under ``torch.compile``, which ding does not use. When ``torch._dynamo`` is not
loaded yet, :func:`skip_dynamo_import` tells those wrappers to call the plain function instead, so creating an Adam
optimizer imports nothing. Set ``DING_KEEP_DYNAMO_GUARDS=1`` to keep torch's behaviour (e.g. if you wrap ding's
training step in ``torch.compile``).
"""
from __future__ import annotations

import os
import sys
from typing import Any

_done = False


def _raw_functions() -> list[Any]:
    import torch.optim as optim
    import torch.optim.optimizer as optimizer_mod

    found = []
    for name in ("add_param_group", "zero_grad", "state_dict", "load_state_dict"):
        found.append(getattr(optimizer_mod.Optimizer, name, None))
    for mod_name in ("adam", "adamw", "sgd", "rmsprop"):
        mod = getattr(optim, mod_name, None)
        found.append(getattr(mod, mod_name, None) if mod is not None else None)
    return [getattr(f, "__wrapped__", None) for f in found if f is not None]


def skip_dynamo_import() -> bool:
    """Apply the shortcut once per process; returns whether it is in effect."""
    global _done
    if _done:
        return True
    if os.environ.get("DING_KEEP_DYNAMO_GUARDS") == "1" or "torch._dynamo" in sys.modules:
        return False
    for raw in _raw_functions():
        # torch._compile._disable_dynamo caches the wrapped function under this attribute; pre-filling it with the
        # function itself means "call it directly". Attributes that are missing (other torch versions) are skipped.
        if raw is not None and getattr(raw, "__dynamo_disable", None) is None:
            try:
                raw.__dynamo_disable = raw
            except (AttributeError, TypeError):
                continue
    _done = True
    return True


def _raw_adam_step() -> Any:
    import inspect

    import torch

    raw = inspect.unwrap(torch.optim.Adam.step)
    return None if raw is torch.optim.Adam.step else raw


def make_adam(params: Any, **kwargs: Any) -> Any:
    """``torch.optim.Adam(params, **kwargs)`` whose ``step`` does not import ``torch._dynamo``.

    torch's ``Adam.step`` is wrapped in a helper that imports ``torch._dynamo`` on every call (for a graph break that
    only means something under ``torch.compile``). The returned optimizer is a ``torch.optim.Adam`` whose ``step``
    runs the same update without that wrapper; its state dicts are interchangeable with a plain Adam's.
    """
    import torch

    if not skip_dynamo_import():
        return torch.optim.Adam(params, **kwargs)
    return _LeanAdam(params, **kwargs)


def _lean_adam_cls() -> type:
    import torch

    raw_step = _raw_adam_step()

    class LeanAdam(torch.optim.Adam):
        def step(self, closure: Any = None) -> Any:
            if raw_step is None:  # a torch version without the wrapper layout this relies on
                return super().step(closure)
            prev = torch.is_grad_enabled()
            torch.set_grad_enabled(self.defaults["differentiable"])
            try:
                return raw_step(self, closure)
            finally:
                torch.set_grad_enabled(prev)

    LeanAdam.__name__ = LeanAdam.__qualname__ = "Adam"
    return LeanAdam


class _LazyAdam:
    cls: type | None = None

    def __call__(self, params: Any, **kwargs: Any) -> Any:
        if self.cls is None:
            self.cls = _lean_adam_cls()
        return self.cls(params, **kwargs)


_LeanAdam = _LazyAdam()
