"""SampleStore: the parallel learner's decoded samples by data id, one array per field, so a batch is a few gathers.

Samples come from files anyone who can write ``path_data`` may have planted: :meth:`SampleStore.check` refuses one
that does not fit the run's schema, and the bytes held are capped (``max_bytes``), so rows are sized from the cap,
never from a shape a peer gave.
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


_Kind = tuple[np.dtype, tuple[int, ...]]


def _kind(value: Any) -> _Kind | None:
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


def _kinds(sample: Mapping[str, Any]) -> dict[str, _Kind | None]:
    return {k: _kind(v) for k, v in sample.items()}


def _columns(kinds: dict[str, _Kind | None]) -> dict[str, _Kind]:
    return {k: kind for k, kind in kinds.items() if kind is not None}


class SampleStore:
    """Up to ``capacity`` decoded samples, kept as rows of one array per field (reused oldest first, as a FIFO buffer
    of that size lets its samples go) when the sample has exactly the run's column fields, else as a dict."""

    def __init__(self, capacity: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.capacity = max(0, int(capacity))
        self.max_bytes = max(1, int(max_bytes))
        self._schema: dict[str, _Kind] | None = None  # the column fields ({}: a field is no column, no rows)
        self._first: dict[str, _Kind] | None = None  # the first accepted sample's column fields
        self._row_bytes = 0
        self._arrays: dict[str, np.ndarray] = {}
        self._row_of: dict[str, int] = {}
        self._id_of: list[str | None] = []
        self._next = 0  # the next row to fill (the oldest once the store is full)
        self._odd: collections.OrderedDict[str, tuple[Mapping[str, Any], int]] = collections.OrderedDict()
        self._odd_total = 0  # the estimated bytes of the samples kept as dicts (with their sizes in _odd)

    def __len__(self) -> int:
        return len(self._row_of) + len(self._odd)

    def __contains__(self, data_id: object) -> bool:
        return data_id in self._row_of or data_id in self._odd

    @property
    def held_bytes(self) -> int:
        """The decoded bytes held: the column arrays allocated, and the estimated size of the samples kept as dicts."""
        return sum(a.nbytes for a in self._arrays.values()) + self._odd_total

    def check(self, samples: Mapping[str, Any], where: str) -> None:
        """Refuse (:class:`SampleMismatch`, naming ``where``) a file's samples whose field has another shape or dtype
        than the first accepted sample's, or that are larger than the byte cap."""
        first = self._first
        for data_id, sample in samples.items():
            if not isinstance(sample, Mapping):
                raise SampleMismatch(f"{where}: sample '{data_id}' is a {type(sample).__name__}, not a dict of fields")
            kinds = _kinds(sample)
            if first is None:
                first = _columns(kinds)
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
        """Keep ``samples`` (data id -> sample, passed :meth:`check`); the oldest give way beyond the caps."""
        if self.capacity == 0:
            return
        for data_id, sample in samples.items():
            if data_id in self:
                continue
            if self._first is None:
                kinds = _kinds(sample)
                self._first = _columns(kinds)
                self._schema = dict(self._first) if len(self._first) == len(kinds) else {}
                self._row_bytes = sum(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                                      for dtype, shape in self._schema.values())
            if self._schema and _kinds(sample) == self._schema and self._row_bytes <= self.max_bytes:
                self._put_row(data_id, sample)
            else:
                size = _size_of(sample)
                self._odd[data_id] = (sample, size)
                self._odd_total += size
                while self._odd and (len(self._odd) > self.capacity or self.held_bytes > self.max_bytes):
                    self._odd_total -= self._odd.popitem(last=False)[1][1]

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
        """The sample of ``data_id`` as a dict, arrays as copies (None: not kept)."""
        row = self._row_of.get(data_id)
        if row is not None:
            return {k: a[row].copy() if a.ndim > 1 else a[row] for k, a in self._arrays.items()}
        odd = self._odd.get(data_id)
        return None if odd is None else odd[0]

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
    """About how many bytes a decoded sample holds (arrays exactly, the rest as CPython lays it out)."""
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
