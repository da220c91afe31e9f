"""Small helpers used everywhere: dict merging, seeding, timing."""
from __future__ import annotations

import copy
import random
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from easydict import EasyDict


def deep_merge_dicts(original: Mapping, new_dict: Mapping | None) -> EasyDict:
    """Return a new EasyDict: ``original`` updated recursively by ``new_dict`` (neither input is changed)."""
    merged = EasyDict(copy.deepcopy(dict(original)))
    if new_dict:
        deep_update(merged, copy.deepcopy(dict(new_dict)))
    return merged


def deep_update(original: dict, new_dict: Mapping, new_keys_allowed: bool = True,
                whitelist: Sequence[str] | None = None,
                override_all_if_type_changes: Sequence[str] | None = None) -> dict:
    """Update ``original`` in place, recursing into nested mappings.

    DI-engine's options: ``new_keys_allowed=False`` raises RuntimeError on a key ``original`` lacks, except inside
    the top-level keys named in ``whitelist``; for the top-level keys in ``override_all_if_type_changes``, a new
    sub-dict whose ``'type'`` differs from the old one's replaces it whole instead of being merged.
    """
    open_keys, replace_on_type = set(whitelist or ()), set(override_all_if_type_changes or ())
    for k, v in new_dict.items():
        if k not in original and not new_keys_allowed:
            raise RuntimeError(f"deep_update: unknown key {k!r} (new keys are not allowed here)")
        old = original.get(k)
        if isinstance(v, Mapping) and isinstance(old, Mapping):
            if k in replace_on_type and "type" in v and v["type"] != old.get("type"):
                original[k] = v
            else:
                deep_update(old, v, new_keys_allowed or k in open_keys)  # type: ignore[arg-type]
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
    """Unwrap a one-element list/tuple/dict; a longer list or tuple comes back as a tuple (DI-engine's form, e.g. a
    multi-discrete action shape ``[2, 3] -> (2, 3)``)."""
    if isinstance(data, (list, tuple)):
        return data[0] if len(data) == 1 else tuple(data)
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


def default_get(data: Mapping[str, Any], name: str, default_value: Any = None,
                default_fn: Callable[[], Any] | None = None, judge_fn: Callable[[Any], bool] | None = None) -> Any:
    """``data[name]`` if present, else ``default_fn()`` (when given) or ``default_value``; a default that fails
    ``judge_fn`` raises AssertionError (DI-engine's contract)."""
    if name in data:
        return data[name]
    value = default_fn() if default_fn is not None else default_value
    if judge_fn is not None and not judge_fn(value):
        raise AssertionError(f"default_get: the default {value!r} for {name!r} fails its judge_fn")
    return value


def override(cls: type) -> Callable[[Callable], Callable]:
    """Mark a method as overriding one of ``cls``; a name ``cls`` does not have raises NameError at class creation
    (a typo in an override is caught where it is written)."""
    def check(method: Callable) -> Callable:
        if method.__name__ not in dir(cls):
            raise NameError(f"override: {method.__name__!r} does not override a method of {cls.__name__}")
        return method

    return check


def error_wrapper(fn: Callable, default_ret: Any, warning_msg: str = "") -> Callable:
    """``fn`` that returns ``default_ret`` (logging a warning with ``warning_msg`` and the error) instead of raising
    an Exception."""
    import functools
    import logging

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 -- the wrapper's contract: any failure becomes default_ret
            logging.getLogger(__name__).warning("error_wrapper(%s): %s%s: %s; returning %r",
                                                getattr(fn, "__name__", fn), warning_msg and warning_msg + ": ",
                                                type(e).__name__, e, default_ret)
            return default_ret

    return wrapped


def list_split(data: Sequence[Any], step: int) -> tuple[list[list[Any]], list[Any] | None]:
    """``data`` cut into chunks of ``step``: ``(full chunks, the remainder or None when there is none)``."""
    if step < 1:
        raise ValueError(f"list_split: step must be >= 1, got {step}")
    items = list(data)
    full = len(items) // step * step
    chunks = [items[i:i + step] for i in range(0, full, step)]
    return chunks, (items[full:] or None)


class LimitedSpaceContainer:
    """A counter of used slots ``cur`` in ``[min_val, max_val]``: acquire / release a slot, grow / shrink the
    capacity."""

    def __init__(self, min_val: int, max_val: int) -> None:
        if not min_val <= max_val:
            raise ValueError(f"LimitedSpaceContainer: min_val ({min_val}) must be <= max_val ({max_val})")
        self.min_val, self.max_val = int(min_val), int(max_val)
        self.cur = self.min_val

    def get_residual_space(self) -> int:
        """Take every free slot at once; returns how many were free."""
        free = self.max_val - self.cur
        self.cur = self.max_val
        return free

    def acquire_space(self) -> bool:
        if self.cur < self.max_val:
            self.cur += 1
            return True
        return False

    def release_space(self) -> None:
        if self.cur <= self.min_val:
            raise ValueError(f"LimitedSpaceContainer: nothing to release (cur={self.cur}, min_val={self.min_val})")
        self.cur -= 1

    def increase_space(self) -> None:
        self.max_val += 1

    def decrease_space(self) -> None:
        if self.max_val <= self.min_val:
            raise ValueError(f"LimitedSpaceContainer: cannot shrink below min_val ({self.min_val})")
        self.max_val -= 1


def flatten_dict(data: Mapping[str, Any], delimiter: str = "/") -> dict[str, Any]:
    """A nested dict as one level, the keys joined by ``delimiter`` (``{'b': {'c': 3}} -> {'b/c': 3}``)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            for sub, v in flatten_dict(value, delimiter).items():
                out[f"{key}{delimiter}{sub}"] = v
        else:
            out[str(key)] = value
    return out


_WARNED: set[str] = set()


def one_time_warning(warning_msg: str) -> None:
    """Log ``warning_msg`` as a warning the first time it is given in this process, never again."""
    import logging

    if warning_msg not in _WARNED:
        _WARNED.add(warning_msg)
        logging.getLogger(__name__).warning(warning_msg)


def get_shape0(data: Any) -> int:
    """The batch size (first dimension) of a tensor, or of the first tensor in a (nested) dict / list / tuple /
    treetensor; a leaf that is neither raises TypeError."""
    if hasattr(data, "shape") and not isinstance(data, Mapping) and not type(data).__module__.startswith("treetensor"):
        return int(data.shape[0])
    if isinstance(data, (list, tuple)):
        return get_shape0(data[0])
    if hasattr(data, "items"):  # dicts and treetensor trees
        return get_shape0(next(iter(data.values())))
    raise TypeError(f"get_shape0: cannot take a batch size from {type(data).__name__}")


def __getattr__(name: str) -> Any:
    # DI-engine's default_helper also holds these; they live in their own modules here (one implementation)
    if name == "RunningMeanStd":
        from .running_mean_std import RunningMeanStd
        return RunningMeanStd
    if name == "split_data_generator":
        from .data_split import split_data_generator
        return split_data_generator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
