"""Batching lists of samples (``default_collate``) and splitting a batch back (``default_decollate``): the one
implementation behind ``ding.utils.data`` (DI-engine's import path) and ``ding.torch_utils``."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _collate_scalars(elem: Any, batch: Sequence[Any]) -> torch.Tensor | None:
    """A batch of python / numpy scalars as one tensor (bool, int64 or float32); None if ``elem`` is no scalar."""
    if isinstance(elem, (bool, np.bool_)):
        return torch.as_tensor(np.asarray(batch, dtype=bool))
    if isinstance(elem, (int, np.integer)):
        return torch.as_tensor(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, (float, np.floating)):
        return torch.as_tensor(np.asarray(batch, dtype=np.float32))
    return None


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
        try:  # np.array copies equal-shape arrays into one block, cheaper than np.stack for small items
            stacked = np.array(batch)
        except ValueError as e:
            shapes = sorted({np.shape(b) for b in batch})
            raise ValueError(f"default_collate: cannot batch arrays of different shapes {shapes}") from e
        if stacked.dtype == object or stacked.shape[0] != len(batch):
            raise ValueError(f"default_collate: cannot batch arrays of different shapes "
                             f"{sorted({np.shape(b) for b in batch})}")
        out = torch.from_numpy(stacked)
        return out.squeeze(1) if cat_1dim and elem.ndim == 1 and elem.shape[0] == 1 else out
    scalars = _collate_scalars(elem, batch)
    if scalars is not None:
        return scalars
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
    """Inverse of :func:`default_collate`: split a batched structure into a list of per-sample structures.

    As in DI-engine, a (B,) tensor splits into B tensors of shape (1,) (so a policy's per-env action or value keeps a
    dimension, like the shape-(1,) actions random warm-up draws from a 1-D Box); a (B, ...) tensor splits into
    tensors of shape (...)."""
    if isinstance(batch, torch.Tensor):
        return list(torch.split(batch, 1, 0)) if batch.dim() == 1 else list(torch.unbind(batch, 0))
    if isinstance(batch, np.ndarray):
        return list(batch)
    if isinstance(batch, Mapping):
        # keys in ``ignore`` (a recurrent model's per-sample states) are already per-sample lists: indexed, not split
        cols = {k: batch[k] if k in ignore else default_decollate(batch[k]) for k in batch}
        split = [k for k in cols if k not in ignore]
        n = len(cols[split[0]]) if split else (len(next(iter(cols.values()))) if cols else 0)
        return [{k: cols[k][i] for k in cols if k not in ignore or _indexable(cols[k], n)} for i in range(n)]
    if isinstance(batch, (list, tuple)):
        seq_cols = [default_decollate(b) for b in batch]
        return [type(batch)(c[i] for c in seq_cols) for i in range(len(seq_cols[0]))] if seq_cols else []
    raise TypeError(f"default_decollate: cannot split an object of type {type(batch).__name__}")


def _indexable(x: Any, n: int) -> bool:
    return isinstance(x, (list, tuple)) and len(x) == n


def diff_shape_collate(batch: Sequence[Any]) -> Any:
    """Like :func:`default_collate`, but a field whose items differ in shape, or hold a None, stays a list of the
    items (e.g. variable-size observations) instead of raising."""
    if len(batch) == 0:
        raise ValueError("diff_shape_collate: got an empty batch")
    elem = batch[0]
    if any(b is None for b in batch):
        return list(batch)
    if isinstance(elem, (torch.Tensor, np.ndarray)) and not np.isscalar(elem):
        items = [torch.as_tensor(b) for b in batch]
        return torch.stack(items, 0) if len({tuple(t.shape) for t in items}) == 1 else items
    scalars = _collate_scalars(elem, batch)
    if scalars is not None:
        return scalars
    if isinstance(elem, Mapping):
        return {k: diff_shape_collate([d[k] for d in batch]) for k in elem}
    if _is_namedtuple(elem):
        return type(elem)(*(diff_shape_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence) and not isinstance(elem, str):
        return [diff_shape_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"diff_shape_collate: cannot batch items of type {type(elem).__name__}")


def timestep_collate(batch: Sequence[Any]) -> Any:
    """Batch B samples whose fields each hold T steps (a list of T values, or an array with T first) step by step:
    a field whose steps collate to tensors of one shape becomes one time-major tensor ``(T, B, ...)``, any other a
    list of T per-step batches. ``prev_state`` (a recurrent model's state before each step) stays as it is, regrouped
    as T lists of B, since states of different shapes do not stack."""
    if len(batch) == 0:
        raise ValueError("timestep_collate: got an empty batch")
    elem = batch[0]
    if not isinstance(elem, Mapping):
        raise TypeError(f"timestep_collate: samples must be dicts of per-step fields, got {type(elem).__name__}")
    out: dict[str, Any] = {}
    for key in elem:
        values = [sample[key] for sample in batch]
        lengths = {len(v) for v in values}
        if len(lengths) != 1:
            raise ValueError(f"timestep_collate: field {key!r} has different numbers of steps across the batch: "
                             f"{sorted(lengths)}")
        if key == "prev_state":
            out[key] = [list(step) for step in zip(*values)]
            continue
        steps = [default_collate([v[t] for v in values]) for t in range(lengths.pop())]
        same = steps and all(isinstance(x, torch.Tensor) and x.shape == steps[0].shape for x in steps)
        out[key] = torch.stack(steps, 0) if same else steps
    return out
