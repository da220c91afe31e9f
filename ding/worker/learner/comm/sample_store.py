"""SampleStore: the parallel learner's decoded samples, kept as columns, so a batch is a few array gathers.

A learn task names its samples by data id; the learner reads each data file once and keeps the decoded samples (data
files never change). Kept as sample dicts, every batch had to be stacked again field by field, a Python loop over its
samples per field; kept here as one array per field (``capacity`` rows, grown as needed, then reused oldest first: the
order a FIFO replay buffer of that size lets its samples go), a batch's column is ``array[rows]``.

A field is stored as a column when every sample has it with one shape and dtype (numpy arrays, numpy scalars, bools,
ints, floats), exactly as :func:`~ding.utils.data.default_collate` would stack it; a sample that does not fit the
columns (a field more or less, another shape) is kept as it is, and a batch holding one is stacked the slow way.
"""
from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ding.utils.data import ColumnBatch

_MIN_ROWS = 1024


def _kind(value: Any) -> tuple[np.dtype, tuple[int, ...]] | None:
    """The column (dtype, per-sample shape) ``default_collate`` would stack ``value`` into; None: not a column."""
    if isinstance(value, np.ndarray):
        return (value.dtype, value.shape) if value.dtype != object else None
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool), ()
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64), ()
    if isinstance(value, (float, np.floating)):
        return np.dtype(np.float32), ()
    return None


class SampleStore:
    """Up to ``capacity`` decoded samples by data id (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self._schema: dict[str, tuple[np.dtype, tuple[int, ...]]] | None = None
        self._arrays: dict[str, np.ndarray] = {}
        self._row_of: dict[str, int] = {}
        self._id_of: list[str | None] = []
        self._next = 0  # the next row to fill (the oldest once the store is full)
        self._odd: collections.OrderedDict[str, Mapping[str, Any]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._row_of) + len(self._odd)

    def __contains__(self, data_id: object) -> bool:
        return data_id in self._row_of or data_id in self._odd

    def put(self, samples: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep ``samples`` (data id -> sample dict), the oldest kept ones giving way beyond ``capacity``."""
        if self.capacity == 0:
            return
        for data_id, sample in samples.items():
            if data_id in self:
                continue
            if self._schema is None:
                kinds = {k: _kind(v) for k, v in sample.items()}
                self._schema = {k: kind for k, kind in kinds.items() if kind is not None}
                if len(self._schema) != len(kinds):  # a field that is no column: every sample stays a dict
                    self._schema = {}
            if self._schema and self._fits(sample):
                self._put_row(data_id, sample)
            else:
                self._odd[data_id] = sample
                while len(self._odd) > self.capacity:
                    self._odd.popitem(last=False)

    def _fits(self, sample: Mapping[str, Any]) -> bool:
        schema = self._schema
        assert schema is not None
        if len(sample) != len(schema):
            return False
        for key, value in sample.items():
            kind = schema.get(key)
            if kind is None or _kind(value) != kind:
                return False
        return True

    def _put_row(self, data_id: str, sample: Mapping[str, Any]) -> None:
        assert self._schema is not None
        row = self._next
        if row >= len(self._id_of):
            if len(self._id_of) < self.capacity:
                self._grow(min(self.capacity, max(_MIN_ROWS, 2 * len(self._id_of))))
            else:
                row = 0
        old = self._id_of[row]
        if old is not None:
            del self._row_of[old]
        for key, value in sample.items():
            self._arrays[key][row] = value
        self._id_of[row] = data_id
        self._row_of[data_id] = row
        self._next = row + 1

    def _grow(self, rows: int) -> None:
        assert self._schema is not None
        n = len(self._id_of)
        for key, (dtype, shape) in self._schema.items():
            grown = np.empty((rows, *shape), dtype=dtype)
            if n:
                grown[:n] = self._arrays[key][:n]
            self._arrays[key] = grown
        self._id_of.extend([None] * (rows - n))

    def get(self, data_id: str) -> Mapping[str, Any] | None:
        """The sample of ``data_id`` as a dict (None: not kept)."""
        row = self._row_of.get(data_id)
        if row is not None:
            return {k: _value(a[row]) for k, a in self._arrays.items()}
        return self._odd.get(data_id)

    def missing(self, data_ids: Sequence[str], also: Mapping[str, Any] | None = None) -> list[str]:
        """The ids of ``data_ids`` not kept here (nor in ``also``)."""
        row_of, odd, also = self._row_of, self._odd, also or {}
        return [i for i in data_ids if i not in row_of and i not in odd and i not in also]

    def batch(self, data_ids: Sequence[str], extra: Mapping[str, list] | None = None,
              also: Mapping[str, Mapping[str, Any]] | None = None) -> ColumnBatch:
        """A :class:`ColumnBatch` of the samples ``data_ids``, kept here or else in ``also`` (samples by id), with
        ``extra``'s fields laid over them (as :meth:`ColumnBatch.from_samples`)."""
        row_of = self._row_of
        rows = [row_of.get(i, -1) for i in data_ids]
        if -1 in rows or not self._arrays:  # a sample kept as a dict (or not kept): stack the dicts
            samples = [s if (s := self.get(i)) is not None else (also or {}).get(i) for i in data_ids]
            lost = [i for i, s in zip(data_ids, samples) if s is None]
            if lost:
                raise KeyError(f"SampleStore.batch: {lost[:3]} not kept")
            return ColumnBatch.from_samples(samples, extra)  # type: ignore[arg-type]
        index = np.asarray(rows, dtype=np.int64)
        assert self._schema is not None
        columns = {}
        for key, array in self._arrays.items():
            col = array[index]
            columns[key] = col[:, 0] if self._schema[key][1] == (1,) else col  # default_collate's cat_1dim
        return ColumnBatch.from_columns(columns, extra, len(rows))


def _value(x: Any) -> Any:
    """A stored row's value as the sample had it: arrays as arrays (copies), scalars as numpy scalars."""
    return x.copy() if isinstance(x, np.ndarray) else x
