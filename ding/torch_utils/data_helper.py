"""Conversions between numpy, torch and python containers, and batching of lists of samples."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import torch


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


def default_collate(batch: Sequence[Any], cat_1dim: bool = True) -> Any:
    """Batch a list of samples with ONE stack per field.

    Dicts are collated per key (recursively), arrays/tensors/scalars are stacked into a tensor with a new leading
    batch dim, strings and other objects are returned as a list. With ``cat_1dim`` a field whose items are shape-(1,)
    arrays (e.g. rewards) becomes shape ``(B,)``.
    """
    if len(batch) == 0:
        raise ValueError("default_collate: got an empty batch")
    elem = batch[0]
    if isinstance(elem, torch.Tensor):
        out = torch.stack(list(batch), 0)
        return out.squeeze(1) if cat_1dim and elem.dim() == 1 and elem.shape[0] == 1 else out
    if isinstance(elem, np.ndarray):
        try:  # np.array copies equal-shape arrays into one block ~4x faster than np.stack for small items
            stacked = np.array(batch)
        except ValueError as e:
            shapes = sorted({np.shape(b) for b in batch})
            raise ValueError(f"default_collate: cannot batch arrays of different shapes {shapes}") from e
        if stacked.dtype == object or stacked.shape[0] != len(batch):
            raise ValueError(f"default_collate: cannot batch arrays of different shapes "
                             f"{sorted({np.shape(b) for b in batch})}")
        out = torch.from_numpy(stacked)
        return out.squeeze(1) if cat_1dim and elem.ndim == 1 and elem.shape[0] == 1 else out
    if isinstance(elem, (bool, np.bool_)):
        return torch.as_tensor(np.asarray(batch, dtype=bool))
    if isinstance(elem, (int, np.integer)):
        return torch.as_tensor(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, (float, np.floating)):
        return torch.as_tensor(np.asarray(batch, dtype=np.float32))
    if isinstance(elem, Mapping):
        return {k: default_collate([d[k] for d in batch], cat_1dim) for k in elem}
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(s), cat_1dim) for s in zip(*batch)))
    if isinstance(elem, (list, tuple)) and not isinstance(elem, str):
        lengths = {len(e) for e in batch}
        if len(lengths) == 1 and len(elem) > 0 and not isinstance(elem[0], (str, Mapping)):
            return [default_collate(list(s), cat_1dim) for s in zip(*batch)]
        return list(batch)
    return list(batch)


def default_decollate(
    batch: Any, ignore: Sequence[str] = ("prev_state", "prev_actor_state", "prev_critic_state")
) -> list:
    """Inverse of :func:`default_collate`: split a batched structure into a list of per-sample structures."""
    if isinstance(batch, torch.Tensor):
        return list(torch.unbind(batch, 0))
    if isinstance(batch, np.ndarray):
        return list(batch)
    if isinstance(batch, Mapping):
        keys = [k for k in batch if k not in ignore]
        cols = {k: default_decollate(batch[k]) for k in keys}
        n = len(next(iter(cols.values()))) if cols else 0
        return [{k: cols[k][i] for k in keys} for i in range(n)]
    if isinstance(batch, (list, tuple)):
        seq_cols = [default_decollate(b) for b in batch]
        return [type(batch)(c[i] for c in seq_cols) for i in range(len(seq_cols[0]))] if seq_cols else []
    raise TypeError(f"default_decollate: cannot split an object of type {type(batch).__name__}")
