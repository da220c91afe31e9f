"""SampleStore: the parallel learner's decoded samples, kept as columns, so a batch is a few array gathers.

A learn task names its samples by data id; the learner reads each data file once and keeps the decoded samples (data
files never change). Kept as sample dicts, every batch had to be stacked again field by field, a Python loop over its
samples per field; kept here as one array per field (``capacity`` rows, grown as needed, then reused oldest first: the
order a FIFO replay buffer of that size lets its samples go), a batch's column is ``array[rows]``.

A field is stored as a column when every sample has it with one shape and dtype (numpy arrays, numpy scalars, bools,
ints, floats), exactly as :func:`~ding.utils.data.default_collate` would stack it; a sample with a field more or less
is kept as it is, and a batch holding one is stacked the slow way.

Samples come from files anyone who can write ``path_data`` may have planted, so the store trusts neither their shapes
nor their number: a sample whose field has another shape or dtype than the run's first accepted sample (its schema)
is refused by :meth:`check` with a :class:`SampleMismatch` naming the field and both shapes; the decoded bytes held
are capped (``max_bytes``, columns and samples kept as dicts together: the oldest give way), so the rows allocated
are sized from that cap, never from a shape a peer gave; a single sample larger than the cap is refused.
"""
from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ding.utils import DataFileError
from ding.utils.data import ColumnBatch

_MIN_ROWS = 1024
DEFAULT_MAX_BYTES = 1 << 30


class SampleMismatch(DataFileError):
    """A sample that does not fit the run's sample schema, or the store's byte cap."""


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

    def __init__(self, capacity: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.capacity = max(0, int(capacity))
        self.max_bytes = max(1, int(max_bytes))
        self._schema: dict[str, tuple[np.dtype, tuple[int, ...]]] | None = None
        self._first: dict[str, tuple[np.dtype, tuple[int, ...]]] | None = None  # the first accepted sample's kinds
        self._row_bytes = 0
        self._odd_bytes: dict[str, int] = {}
        self._odd_total = 0
        self._arrays: dict[str, np.ndarray] = {}
        self._row_of: dict[str, int] = {}
        self._id_of: list[str | None] = []
        self._next = 0  # the next row to fill (the oldest once the store is full)
        self._odd: collections.OrderedDict[str, Mapping[str, Any]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._row_of) + len(self._odd)

    def __contains__(self, data_id: object) -> bool:
        return data_id in self._row_of or data_id in self._odd

    @property
    def held_bytes(self) -> int:
        """The decoded bytes held: the column arrays allocated, and the estimated size of the samples kept as dicts."""
        return sum(a.nbytes for a in self._arrays.values()) + self._odd_total

    def check(self, samples: Mapping[str, Any], where: str) -> None:
        """Refuse (:class:`SampleMismatch`, naming ``where``) a file's samples that do not fit the run's schema (the
        first accepted sample's fields: each field both have must have one shape and dtype) or the byte cap."""
        first = self._first
        for data_id, sample in samples.items():
            if not isinstance(sample, Mapping):
                raise SampleMismatch(f"{where}: sample '{data_id}' is a {type(sample).__name__}, not a dict of fields")
            kinds = {k: _kind(v) for k, v in sample.items()}
            if first is None:
                first = {k: kind for k, kind in kinds.items() if kind is not None}
                continue
            for key, kind in kinds.items():
                want = first.get(key)
                if want is not None and kind is not None and kind != want:
                    raise SampleMismatch(
                        f"{where}: field '{key}' of sample '{data_id}' has shape {kind[1]} and dtype {kind[0]}, the "
                        f"run's samples have shape {want[1]} and dtype {want[0]} (a collector built for another "
                        "environment or config, or a planted file); the file is skipped")
            size = _size_of(sample)
            if size > self.max_bytes:
                raise SampleMismatch(f"{where}: sample '{data_id}' decodes to about {size:,} bytes, over the learner's "
                                     f"sample_cache_mb ({self.max_bytes / 2**20:g} MiB); raise it for samples this "
                                     "large")

    def put(self, samples: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep ``samples`` (data id -> sample dict, passed :meth:`check`), the oldest kept ones giving way beyond
        ``capacity`` samples or ``max_bytes``."""
        if self.capacity == 0:
            return
        for data_id, sample in samples.items():
            if data_id in self:
                continue
            if self._first is None:
                kinds = {k: _kind(v) for k, v in sample.items()}
                self._first = {k: kind for k, kind in kinds.items() if kind is not None}
                self._schema = dict(self._first) if len(self._first) == len(kinds) else {}  # a field that is no
                self._row_bytes = sum(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize  # column: every sample
                                      for dtype, shape in self._schema.values())  # stays a dict
            if self._schema and self._fits(sample) and self._row_bytes <= self.max_bytes:
                self._put_row(data_id, sample)
            else:
                size = _size_of(sample)
                self._odd[data_id] = sample
                self._odd_bytes[data_id] = size
                self._odd_total += size
                while self._odd and (len(self._odd) > self.capacity or self.held_bytes > self.max_bytes):
                    old, _ = self._odd.popitem(last=False)
                    self._odd_total -= self._odd_bytes.pop(old)

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
            most = min(self.capacity, max(1, (self.max_bytes - self._odd_total) // max(1, self._row_bytes)))
            if len(self._id_of) < most:
                self._grow(min(most, max(_MIN_ROWS, 2 * len(self._id_of))))
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


def _size_of(x: Any, depth: int = 0) -> int:
    """About how many bytes a decoded sample holds (arrays exactly, Python containers and scalars as CPython lays
    them out)."""
    if isinstance(x, np.ndarray):
        return int(x.nbytes) + 112
    if isinstance(x, (bytes, bytearray, str)):
        return len(x) + 49
    if depth > 64:
        return 64
    if isinstance(x, Mapping):
        return 232 + sum(_size_of(k, depth + 1) + _size_of(v, depth + 1) + 16 for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return 56 + sum(_size_of(v, depth + 1) + 8 for v in x)
    return 32


def _value(x: Any) -> Any:
    """A stored row's value as the sample had it: arrays as arrays (copies), scalars as numpy scalars."""
    return x.copy() if isinstance(x, np.ndarray) else x
