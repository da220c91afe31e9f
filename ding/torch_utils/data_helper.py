"""Conversions between numpy, torch and python containers, and batching of lists of samples."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import torch

from ding.utils.data.collate_fn import default_collate, default_decollate  # noqa: F401  (one implementation, two paths)


def to_tensor(item: Any, dtype: torch.dtype | None = None, transform_scalar: bool = True) -> Any:
    """Recursively turn numpy arrays (and, if ``transform_scalar``, python scalars) into tensors."""
    if isinstance(item, torch.Tensor):
        return item if dtype is None else item.to(dtype)
    if isinstance(item, np.ndarray):
        t = torch.from_numpy(item)
        return t if dtype is None else t.to(dtype)
    if isinstance(item, Mapping):
        return _same_mapping(item, {k: to_tensor(v, dtype, transform_scalar) for k, v in item.items()}) \
            if not _is_namedtuple(item) else item
    if _is_namedtuple(item):
        return type(item)(*[to_tensor(v, dtype, transform_scalar) for v in item])
    if isinstance(item, (list, tuple)):
        return type(item)(to_tensor(v, dtype, transform_scalar) for v in item)
    if isinstance(item, (bool, int, float, np.generic)) and transform_scalar:
        t = torch.as_tensor(item)
        return t if dtype is None else t.to(dtype)
    return item


def to_ndarray(item: Any, dtype: np.dtype | None = None) -> Any:
    """Recursively turn tensors into numpy arrays."""
    if isinstance(item, torch.Tensor):
        a = item.detach().cpu().numpy()
        return a if dtype is None else a.astype(dtype)
    if isinstance(item, np.ndarray):
        return item if dtype is None else item.astype(dtype)
    if isinstance(item, Mapping):
        return _same_mapping(item, {k: to_ndarray(v, dtype) for k, v in item.items()})
    if _is_namedtuple(item):
        return type(item)(*[to_ndarray(v, dtype) for v in item])
    if isinstance(item, (list, tuple)):
        return type(item)(to_ndarray(v, dtype) for v in item)
    return item


def to_device(item: Any, device: str | torch.device) -> Any:
    if isinstance(item, torch.Tensor):
        return item.to(device)
    if isinstance(item, torch.nn.Module):
        return item.to(device)
    if isinstance(item, Mapping):
        return _same_mapping(item, {k: to_device(v, device) for k, v in item.items()})
    if _is_namedtuple(item):
        return type(item)(*[to_device(v, device) for v in item])
    if isinstance(item, (list, tuple)):
        return type(item)(to_device(v, device) for v in item)
    return item


def _same_mapping(item: Mapping, entries: dict) -> Mapping:
    """A mapping of ``item``'s own type holding ``entries``.

    The ``Mapping`` ABC has no constructor signature; the mappings converted here (dict, EasyDict, OrderedDict, ...)
    are built from a dict.
    """
    mapping_type = cast("Callable[[dict], Mapping]", type(item))
    return mapping_type(entries)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def obs_to_float(obs: torch.Tensor) -> torch.Tensor:
    """An observation batch as the network's float input: uint8 (pixels, kept uint8 in buffers and on the wire) is
    scaled to [0, 1] with /255 where it already is (on the learner's device when moved there first); other dtypes
    are cast to float32 unchanged; float32 is returned as is."""
    if obs.dtype == torch.uint8:
        return obs.to(torch.float32).div_(255.0)
    return obs if obs.dtype == torch.float32 else obs.float()
