"""Target-network updates: hard copy and Polyak (soft) averaging."""
from __future__ import annotations

import torch
import torch.nn as nn


@torch.no_grad()
def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy every parameter and buffer of ``source`` into ``target``."""
    target.load_state_dict(source.state_dict())


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, theta: float) -> None:
    """``target <- (1 - theta) * target + theta * source`` for parameters; buffers (e.g. BN stats) are copied."""
    torch._foreach_lerp_(list(target.parameters()), list(source.parameters()), theta)
    for t, s in zip(target.buffers(), source.buffers()):
        t.copy_(s)
