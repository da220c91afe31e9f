"""Conversions between numpy, torch and python containers, and batching of lists of samples."""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Sequence, cast

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
        if item and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in item):
            return torch.tensor(item, dtype=dtype)  # a list of numbers is one tensor (DI-engine's rule)
        return type(item)(to_tensor(v, dtype, transform_scalar) for v in item)
    if isinstance(item, (bool, int, float, np.generic)):
        if not transform_scalar:
            return item
        t = torch.as_tensor(item)
        return t if dtype is None else t.to(dtype)
    return _passthrough(item, "to_tensor")


def _passthrough(item: Any, what: str) -> Any:
    """What the converters leave as it is: None, strings, bytes and python scalars; anything else (a set, an
    arbitrary object) has no conversion and raises TypeError."""
    if item is None or isinstance(item, (str, bytes, bool, int, float, complex, np.generic)):
        return item
    raise TypeError(f"{what}: unsupported item type {type(item).__name__}")


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
    return _passthrough(item, "to_ndarray")


def to_device(item: Any, device: str | torch.device, ignore_keys: Sequence[str] = ()) -> Any:
    """Tensors and modules (nested in dicts / lists / tuples / namedtuples) moved to ``device``; the entries of a
    dict named in ``ignore_keys`` stay where they are."""
    if isinstance(item, torch.Tensor):
        return item.to(device)
    if isinstance(item, torch.nn.Module):
        return item.to(device)
    if isinstance(item, np.ndarray):  # host memory: stays as it is
        return item
    if isinstance(item, Mapping):
        return _same_mapping(item, {k: v if k in ignore_keys else to_device(v, device, ignore_keys)
                                    for k, v in item.items()})
    if _is_namedtuple(item):
        return type(item)(*[to_device(v, device, ignore_keys) for v in item])
    if isinstance(item, (list, tuple)):
        return type(item)(to_device(v, device, ignore_keys) for v in item)
    return _passthrough(item, "to_device")


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


def _nested(fn: Callable[[Any], Any], item: Any, leaf: Callable[[Any], bool], what: str) -> Any:
    """``fn`` applied to every leaf (``leaf(x)``) of nested dicts / lists / tuples (lists out); None and numpy
    scalars pass through; anything else raises naming ``what``."""
    if item is None:
        return None
    if leaf(item):
        return fn(item)
    if isinstance(item, (list, tuple)):
        return [_nested(fn, v, leaf, what) for v in item]
    if isinstance(item, Mapping):
        return {k: _nested(fn, v, leaf, what) for k, v in item.items()}
    if np.isscalar(item):
        return item
    raise TypeError(f"{what}: unsupported item type {type(item).__name__}")


def to_list(item: Any) -> Any:
    """Tensors and numpy arrays (nested in dicts / lists / tuples) as python lists; scalars and None kept."""
    return _nested(lambda x: x.tolist(), item, lambda x: isinstance(x, (torch.Tensor, np.ndarray)), "to_list")


def tensor_to_list(item: Any) -> Any:
    """Like :func:`to_list`, for tensors only (a numpy array is an error)."""
    return _nested(lambda x: x.tolist(), item, lambda x: isinstance(x, torch.Tensor), "tensor_to_list")


def to_item(data: Any, ignore_error: bool = True) -> Any:
    """One-element tensors / arrays (nested) as python scalars; in a dict, with ``ignore_error``, entries that are not
    one element are dropped instead of raising."""
    if data is None or isinstance(data, (bool, str)) or np.isscalar(data):
        return data
    if isinstance(data, (np.ndarray, torch.Tensor)):
        return data.item()
    if isinstance(data, (list, tuple)):
        return [to_item(d) for d in data]
    if isinstance(data, Mapping):
        out = {}
        for k, v in data.items():
            try:
                out[k] = to_item(v)
            except (ValueError, RuntimeError):
                if not ignore_error:
                    raise
        return out
    raise TypeError(f"to_item: unsupported data type {type(data).__name__}")


def same_shape(data: list) -> bool:
    """Whether every element of ``data`` has the same ``.shape``."""
    if not isinstance(data, list):
        raise TypeError(f"same_shape: expected a list, got {type(data).__name__}")
    return len({tuple(t.shape) for t in data}) == 1


def get_tensor_data(data: Any) -> Any:
    """Detached copies of the tensors in ``data`` (nested in dicts / sequences), leaving the graph alone."""
    if isinstance(data, torch.Tensor):
        return data.data.clone()
    if data is None:
        return None
    if isinstance(data, Mapping):
        return {k: get_tensor_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [get_tensor_data(d) for d in data]
    raise TypeError(f"get_tensor_data: unsupported type {type(data).__name__}")


def get_null_data(template: Mapping[str, Any], num: int) -> list[dict[str, Any]]:
    """``num`` padding copies of a transition: ``null`` and ``done`` True, ``reward`` zeroed."""
    out = []
    for _ in range(num):
        data = copy.deepcopy(dict(template))
        data["null"] = True
        data["done"] = True
        data["reward"] = torch.zeros_like(torch.as_tensor(data["reward"]))
        out.append(data)
    return out
