"""DI-engine's small tensor helpers that work through nested containers: ``to_dtype``, ``unsqueeze``, ``squeeze``."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch


def to_dtype(item: Any, dtype: torch.dtype) -> Any:
    """Cast every tensor in ``item`` (a tensor, or dicts / lists / tuples of them) to ``dtype``."""
    if isinstance(item, torch.Tensor):
        return item.to(dtype=dtype)
    if isinstance(item, Mapping):
        return {k: to_dtype(v, dtype) for k, v in item.items()}
    if isinstance(item, (list, tuple)):
        return type(item)(to_dtype(v, dtype) for v in item)
    raise TypeError(f"to_dtype: cannot cast an object of type {type(item).__name__} (tensors, dicts, lists, tuples)")


def unsqueeze(data: Any, dim: int = 0) -> Any:
    """Add a size-1 axis at ``dim`` to every tensor (or numpy array) in ``data``."""
    if isinstance(data, torch.Tensor):
        return data.unsqueeze(dim)
    if isinstance(data, np.ndarray):
        return np.expand_dims(data, dim)
    if isinstance(data, Mapping):
        return {k: unsqueeze(v, dim) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(unsqueeze(v, dim) for v in data)
    raise TypeError(f"unsqueeze: cannot unsqueeze an object of type {type(data).__name__}")


def squeeze(data: Any, dim: int = 0) -> Any:
    """Remove the size-1 axis ``dim`` from every tensor (or numpy array) in ``data``."""
    if isinstance(data, torch.Tensor):
        return data.squeeze(dim)
    if isinstance(data, np.ndarray):
        return np.squeeze(data, dim)
    if isinstance(data, Mapping):
        return {k: squeeze(v, dim) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(squeeze(v, dim) for v in data)
    raise TypeError(f"squeeze: cannot squeeze an object of type {type(data).__name__}")
