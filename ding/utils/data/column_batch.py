"""ColumnBatch: a batch of train samples held as one column per field, collated once where the samples are read.

A policy's learn step starts by stacking, field by field, the B sample dicts it is given (``default_collate([d[k] for
d in data])``). In a parallel run that stacking, and reading the samples, can happen before the batch reaches the
training thread: a learn task's thread reads the data files and hands over a :class:`ColumnBatch`, whose
:meth:`~ColumnBatch.column` is exactly what that stack would have given, so the training thread spends its time on
the update alone. Policies that take columns say so with ``_learn_takes_columns = True`` in their own class body (see
:func:`learn_takes_columns`) and read fields with :func:`stack_field`; any other policy is given the sample dicts.

Columns are kept as numpy arrays (a tensor shares its memory with them: ``torch.from_numpy``), so a batch pickles as a
handful of arrays, without torch's shared-memory reductions.
"""
from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import torch

from .collate_fn import default_collate

_MISSING = object()


def _to_numpy(value: Any) -> Any:
    """``default_collate``'s output with every CPU tensor as a numpy array (same memory), recursively."""
    if isinstance(value, torch.Tensor):
        return value.numpy() if value.device.type == "cpu" and not value.requires_grad else value
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], (torch.Tensor, dict, list)):
        return [_to_numpy(v) for v in value]
    return value  # (a list of strings or objects: one per sample)


def _to_torch(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_torch(v) for v in value]
    return value


class ColumnBatch(Sequence):
    """``size`` train samples as columns: :meth:`column` gives ``default_collate([s[key] for s in samples])`` without
    stacking anything again. Indexing gives a read-only view of one sample's fields (enough for key checks), so code
    that asks ``'IS' in data[0]`` works unchanged; code that needs the samples themselves is given sample dicts
    instead (:func:`learn_takes_columns`)."""

    __slots__ = ("_columns", "_raw", "_size")
    MISSING = _MISSING  # the value of an ``extra`` field for a sample that has none

    def __init__(self, columns: Mapping[str, Any], raw: Mapping[str, list], size: int) -> None:
        self._columns = dict(columns)
        self._raw = dict(raw)
        self._size = int(size)

    @classmethod
    def from_samples(cls, samples: Sequence[Mapping[str, Any]], extra: Mapping[str, list] | None = None) -> ColumnBatch:
        """Stack each field of the first sample's keys across ``samples``, and each list of ``extra`` (fields laid
        over every sample: ``extra[key][i]`` is sample i's, :attr:`MISSING` where it has none; they win over the
        samples' own). A field that does not stack, or that some sample lacks, is kept as its list of values and
        fails, if at all, where a policy stacks it."""
        if len(samples) == 0:
            raise ValueError("ColumnBatch.from_samples: got no samples")
        extra = extra or {}
        columns: dict[str, Any] = {}
        raw: dict[str, list] = {}
        for key in samples[0]:
            if key in extra:
                continue
            try:
                values = [s[key] for s in samples]
            except KeyError:  # some sample lacks it
                raw[key] = [s.get(key, _MISSING) for s in samples]
                continue
            _stack(key, values, columns, raw)
        return cls.from_columns(columns, extra, len(samples), raw)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any], extra: Mapping[str, list] | None, size: int,
                     raw: Mapping[str, list] | None = None) -> ColumnBatch:
        """``size`` samples from ready columns (numpy arrays of ``size`` rows, each what ``default_collate`` of the
        samples' values would stack) and ``extra``'s fields as lists (stacked here; they win over ``columns``)."""
        columns, raw = dict(columns), dict(raw or {})
        for key, given in (extra or {}).items():
            if len(given) != size:
                raise ValueError(f"ColumnBatch: extra field {key!r} has {len(given)} values for {size} samples")
            columns.pop(key, None)
            values = list(given)
            if any(map(operator.is_, values, repeat(_MISSING))):
                raw[key] = values
            else:
                _stack(key, values, columns, raw)
        return cls(columns, raw, size)

    def keys(self) -> list[str]:
        return [*self._columns, *self._raw]

    def column(self, key: str) -> Any:
        """``default_collate([s[key] for s in samples])`` (KeyError as that would raise, for a missing field)."""
        if key in self._columns:
            return _to_torch(self._columns[key])
        values = self._raw[key]
        missing = [i for i, v in enumerate(values) if v is _MISSING]
        if missing:
            raise KeyError(f"{key!r} (absent from sample {missing[0]} of the batch)")
        return default_collate(values)

    def split(self, sizes: Sequence[int]) -> list[ColumnBatch]:
        """Consecutive parts of ``sizes`` samples each (their columns are views of this batch's, nothing copied)."""
        if sum(sizes) != self._size or any(n < 0 for n in sizes):
            raise ValueError(f"ColumnBatch.split: sizes {list(sizes)} do not add up to the batch's {self._size}")
        parts, start = [], 0
        for n in sizes:
            stop = start + n
            parts.append(ColumnBatch({k: _slice(v, start, stop) for k, v in self._columns.items()},
                                     {k: v[start:stop] for k, v in self._raw.items()}, n))
            start = stop
        return parts

    def values(self, key: str) -> list:
        """Field ``key`` of each sample as a plain value (None where a sample lacks it): ids, indices."""
        if key in self._columns:
            col = self._columns[key]
            return col.tolist() if isinstance(col, np.ndarray) else list(col)
        return [None if v is _MISSING else v for v in self._raw[key]]

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise TypeError("ColumnBatch: slicing is not supported; take columns with stack_field")
        i = int(index)
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(f"ColumnBatch index {index} out of range for {self._size} samples")
        return _Row(self, i)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (_Row(self, i) for i in range(self._size))

    def __getstate__(self) -> tuple:
        return self._columns, {k: [None if v is _MISSING else v for v in vs] for k, vs in self._raw.items()}, \
            {k: [i for i, v in enumerate(vs) if v is _MISSING] for k, vs in self._raw.items()}, self._size

    def __setstate__(self, state: tuple) -> None:
        columns, raw, missing, size = state
        for key, idx in missing.items():
            for i in idx:
                raw[key][i] = _MISSING
        self._columns, self._raw, self._size = columns, raw, size

    def __repr__(self) -> str:
        return f"ColumnBatch({self._size} samples, fields {self.keys()})"


def _stack(key: str, values: list, columns: dict[str, Any], raw: dict[str, list]) -> None:
    """``columns[key]``: the values stacked (as numpy); or ``raw[key]``: the values, when they do not stack."""
    try:
        columns[key] = _to_numpy(default_collate(values))
    except (ValueError, TypeError, RuntimeError):
        raw[key] = values


class _Row(Mapping):
    """Sample ``i`` of a :class:`ColumnBatch`, read-only."""

    __slots__ = ("_batch", "_i")

    def __init__(self, batch: ColumnBatch, i: int) -> None:
        self._batch, self._i = batch, i

    def __getitem__(self, key: str) -> Any:
        b = self._batch
        if key in b._columns:
            return _index(_to_torch(b._columns[key]), self._i)
        value = b._raw[key][self._i]
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        b = self._batch
        return key in b._columns or (key in b._raw and b._raw[key][self._i] is not _MISSING)

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._batch.keys() if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _per_field(value: list) -> bool:
    """A list column is either one stack per field of list-valued samples (arrays or dicts of them, as
    ``default_collate`` makes them) or one value per sample (strings, objects)."""
    return bool(value) and all(isinstance(v, (np.ndarray, torch.Tensor, dict)) for v in value)


def _index(value: Any, i: int) -> Any:
    if isinstance(value, torch.Tensor):
        return value[i]
    if isinstance(value, dict):
        return {k: _index(v, i) for k, v in value.items()}
    if isinstance(value, list):
        return [_index(v, i) for v in value] if _per_field(value) else value[i]
    return value


def _slice(value: Any, start: int, stop: int) -> Any:
    if isinstance(value, np.ndarray):
        return value[start:stop]
    if isinstance(value, dict):
        return {k: _slice(v, start, stop) for k, v in value.items()}
    if isinstance(value, list):
        return [_slice(v, start, stop) for v in value] if _per_field(value) else value[start:stop]
    return value


# what a policy's learn step accepts as a batch of samples: a list (or tuple) of sample dicts, or a ColumnBatch
SAMPLE_BATCH_TYPES = (list, tuple, ColumnBatch)


def stack_field(data: Sequence[Mapping[str, Any]], key: str) -> Any:
    """Field ``key`` of every sample of ``data`` stacked into one batch (``default_collate``): a
    :class:`ColumnBatch`'s column as it is, a list of sample dicts stacked here."""
    if isinstance(data, ColumnBatch):
        return data.column(key)
    return default_collate([d[key] for d in data])


def learn_takes_columns(policy: Any) -> bool:
    """Whether ``policy``'s learn step takes a :class:`ColumnBatch`: its own class (not a base class: a subclass may
    read the samples otherwise) sets ``_learn_takes_columns = True``."""
    return bool(vars(type(policy)).get("_learn_takes_columns", False))
