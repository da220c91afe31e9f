"""Small helpers used everywhere: dict merging, seeding, timing."""
from __future__ import annotations

import copy
import random
import time
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from easydict import EasyDict


def deep_merge_dicts(original: Mapping, new_dict: Mapping | None) -> EasyDict:
    """Return a new EasyDict: ``original`` updated recursively by ``new_dict`` (neither input is changed)."""
    merged = EasyDict(copy.deepcopy(dict(original)))
    if new_dict:
        deep_update(merged, copy.deepcopy(dict(new_dict)))
    return merged


def deep_update(original: dict, new_dict: Mapping) -> dict:
    """Update ``original`` in place, recursing into nested mappings."""
    for k, v in new_dict.items():
        if isinstance(v, Mapping) and isinstance(original.get(k), Mapping):
            deep_update(original[k], v)
        else:
            original[k] = v
    return original


def config_of(cls: type) -> EasyDict:
    """A component's default config: a deep copy of its class attribute ``config`` with ``cfg_type`` set.

    Components implement ``default_config`` as ``return config_of(cls)``; the ``config`` dict is the one place
    where their keys and defaults are written (each with a comment), and the schema the config validator checks.
    """
    cfg = EasyDict(copy.deepcopy(dict(getattr(cls, "config", {}))))
    cfg.cfg_type = cls.__name__ + "Dict"
    return cfg


def set_pkg_seed(seed: int, use_cuda: bool = False) -> None:
    """Seed python's ``random``, numpy's global RNG and torch (CPU and, if asked, CUDA)."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def get_rng_state() -> dict[str, Any]:
    """Snapshot of every global RNG (python, numpy, torch), for exact resume."""
    import torch

    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: Mapping[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


class EasyTimer:
    """Context-manager timer: ``with timer: ...`` then ``timer.value`` holds the seconds taken."""

    def __init__(self) -> None:
        self.value = 0.0

    def __enter__(self) -> EasyTimer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.value = time.perf_counter() - self._start


def squeeze(data: Any) -> Any:
    """Unwrap a one-element list/tuple/dict."""
    if isinstance(data, (list, tuple)) and len(data) == 1:
        return data[0]
    if isinstance(data, dict) and len(data) == 1:
        return next(iter(data.values()))
    return data


def close_all(closables: Iterable[Any]) -> None:
    """``close()`` each object in order, even if one fails; the first failure is raised after all were tried."""
    first_error: BaseException | None = None
    for obj in closables:
        try:
            obj.close()
        except Exception as e:  # noqa: BLE001 -- close the others first, then report the first failure
            first_error = first_error or e
    if first_error is not None:
        raise first_error


def lists_to_dicts(data: Sequence[Any], recursive: bool = False) -> Any:
    """A list of dicts as a dict of lists (``[{a: 1}, {a: 2}] -> {a: [1, 2]}``), or a list of namedtuples as one
    namedtuple of tuples. ``recursive`` also turns nested dicts inside out (``prev_state`` is left as a list)."""
    if len(data) == 0:
        raise ValueError("lists_to_dicts: empty data")
    first = data[0]
    if isinstance(first, dict):
        out = {}
        for k in first:
            column = [d[k] for d in data]
            out[k] = lists_to_dicts(column) if recursive and isinstance(first[k], dict) and k != "prev_state" \
                else column
        return out
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*zip(*data))
    raise TypeError(f"lists_to_dicts: elements must be dicts or namedtuples, got {type(first).__name__}")


def dicts_to_lists(data: Mapping[Any, Sequence[Any]]) -> list[dict[Any, Any]]:
    """A dict of lists as a list of dicts (``{a: [1, 2]} -> [{a: 1}, {a: 2}]``), as long as the shortest list."""
    keys = list(data)
    return [dict(zip(keys, row)) for row in zip(*data.values())]
