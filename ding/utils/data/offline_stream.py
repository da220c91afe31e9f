"""An HDF5 data set too big for the memory budget, streamed: only a window of it is in memory at a time.

:class:`StreamedHDF5Dataset` reads a file in DI-engine's layout (or D4RL's with ``next_observations``) without
loading it. Opening it checks every field once, chunk by chunk (missing fields, shapes, NaNs with their row) and
keeps only summaries: the row count, the observations' mean and std, the actions' range. Training reads it by
windows: the rows are cut into blocks of whole batches, each epoch shuffles the blocks (a function of the run's seed
and the epoch), takes them a window of blocks at a time, reads that window from the file and shuffles its rows (a
function of the seed, the epoch and the window). A batch never spans two windows, one epoch still visits every row
once in ``ceil(rows / batch_size)`` batches, and the loop's position is still ``(epoch, batch)``, so a streamed run
resumes exactly as an in-memory one does. ``policy.collect.memory_budget_mb`` bounds a window's arrays (the
n-step columns included); the shuffle is then local to a window, a coarser one than the in-memory data set's.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ding.utils.errors import DatasetError

from .offline_dataset import ActionSummary, OfflineDataset, _check_finite, _plain, check_fits, hdf5_layout, open_hdf5

BLOCKS_PER_WINDOW = 8  # the shuffle mixes this many blocks of the file in each window


class StreamedHDF5Dataset:
    """An HDF5 data set read a window at a time (see the module docstring); the offline loop's surface of
    :class:`~ding.utils.data.OfflineDataset`: ``len``, ``meta``, ``mean`` / ``std``, ``normalize_obs``,
    ``set_nstep``, ``check_fits``, ``batches_per_epoch`` and ``epoch_batch``."""

    def __init__(self, path: str, memory_budget_bytes: int, chunk_rows: int = 65536) -> None:
        self.source = path
        self.memory_budget_bytes = int(memory_budget_bytes)
        with open_hdf5(path) as f:
            self._names, d4rl = hdf5_layout(f, path)
            if d4rl and "next_obs" not in self._names:
                raise DatasetError(f"{path}: a D4RL file without 'next_observations' cannot be streamed (the next "
                                   "observation is the following row, known only with the whole file); add "
                                   "next_observations, or raise policy.collect.memory_budget_mb so it is loaded")
            self.meta = {k: _plain(v) for k, v in f.attrs.items()}
            self._shapes = {k: tuple(f[n].shape[1:]) for k, n in self._names.items()}
            self._dtypes = {k: np.dtype(f[n].dtype) for k, n in self._names.items()}
            rows = {k: int(f[n].shape[0]) for k, n in self._names.items()}
            self._n = rows["obs"]
            if self._n == 0:
                raise DatasetError(f"{path}: the data set holds no transitions")
            for k, r in rows.items():
                if r != self._n:
                    raise DatasetError(f"{path}: field '{self._names[k]}' has {r} rows, 'obs' has {self._n}; every "
                                       "field needs one row per transition")
            self._norm: tuple[np.ndarray, np.ndarray] | None = None
            self._nstep: tuple[int, float] | None = None
            self._scan(f, max(1, min(chunk_rows, self._window_rows())))
        self._action_dtype: type | None = None
        self._window: tuple[tuple[int, int, int], OfflineDataset, np.ndarray] | None = None

    def _scan(self, f: Any, chunk_rows: int) -> None:
        """One pass over the file: every field finite (a NaN reported with its row), the rows valid as
        :class:`OfflineDataset` checks them, and the summaries the run needs."""
        total, total_sq = np.zeros(self._shapes["obs"]), np.zeros(self._shapes["obs"])
        low, high, integral = math.inf, -math.inf, True
        for start in range(0, self._n, chunk_rows):
            piece = self._read(f, start, min(start + chunk_rows, self._n))
            obs = piece.obs.astype(np.float64)
            total += obs.sum(0)
            total_sq += (obs ** 2).sum(0)
            act = piece.action.reshape(len(piece), -1)
            low, high = min(low, float(act.min())), max(high, float(act.max()))
            integral = integral and (act.dtype.kind in "iub" or bool(np.all(act == np.round(act))))
        self._obs_mean = (total / self._n).astype(np.float32)
        self._obs_std = np.sqrt(np.maximum(total_sq / self._n - (total / self._n) ** 2, 0.0)).astype(np.float32)
        self._actions = ActionSummary(self._dtypes["action"], self._shapes["action"], low, high, integral)

    def _read(self, f: Any, start: int, stop: int) -> OfflineDataset:
        """Rows ``[start, stop)`` of the file as an in-memory data set (checked as any loaded one is)."""
        arrays = {}
        for k, name in self._names.items():
            arr = f[name][start:stop]
            _check_finite(arr, self.source, name, start)
            arrays[k] = arr
        return OfflineDataset(arrays["obs"], arrays["action"], arrays["reward"], arrays["done"], arrays["next_obs"],
                              source=self.source, timeout=arrays.get("timeout"))

    # ------------------------------------------------------------------ the OfflineDataset surface
    def __len__(self) -> int:
        return self._n

    @property
    def mean(self) -> np.ndarray:
        return self._obs_mean

    @property
    def std(self) -> np.ndarray:
        return self._obs_std + 1e-3

    def normalize_obs(self, mean: np.ndarray, std: np.ndarray) -> None:
        """Windows are read with ``(x - mean) / std`` observations."""
        self._norm = (np.asarray(mean, np.float32), np.asarray(std, np.float32))
        self._window = None

    def set_nstep(self, nstep: int, gamma: float) -> None:
        """Windows are read with n-step columns (:meth:`OfflineDataset.set_nstep`; each block is read with the
        ``nstep - 1`` rows after it, so its windows are those of the whole file)."""
        self._nstep = (int(nstep), float(gamma))
        self._window = None

    def check_fits(self, obs_shape: tuple[int, ...] | None, action_space: Any, policy: str) -> None:
        self._action_dtype = check_fits(self.source, self._shapes["obs"], self._actions, obs_shape, action_space,
                                        policy)

    def row_bytes(self) -> int:
        """Bytes one row takes in a window: every field (float32 observations) and the n-step columns."""
        def size(k: str) -> int:
            dtype = np.dtype(np.float32) if k in ("obs", "next_obs") else self._dtypes[k]
            return int(np.prod(self._shapes[k], dtype=np.int64)) * dtype.itemsize

        row = sum(size(k) for k in self._names)
        if self._nstep is not None:  # reward (nstep,), next_obs, done, value_gamma
            row += 4 * self._nstep[0] + size("next_obs") + 1 + 4
        return row

    def _window_rows(self) -> int:
        """Rows of a window: half the budget, as a window's blocks and the window itself meet while it is read."""
        return self.memory_budget_bytes // 2 // self.row_bytes()

    def _block_rows(self, batch_size: int) -> int:
        window_rows = self._window_rows()
        if window_rows < batch_size:
            budget_mb = self.memory_budget_bytes / 2 ** 20
            raise DatasetError(f"{self.source}: policy.collect.memory_budget_mb ({budget_mb:.3g} MB) gives windows "
                               f"of {window_rows} rows of {self.row_bytes()} bytes (half the budget each), fewer "
                               f"than one batch ({batch_size}); raise memory_budget_mb or lower "
                               "policy.learn.batch_size")
        return max(1, window_rows // BLOCKS_PER_WINDOW // batch_size) * batch_size

    def batches_per_epoch(self, batch_size: int) -> int:
        return math.ceil(self._n / batch_size)

    def epoch_batch(self, seed: int, epoch: int, index: int, batch_size: int, columns: bool = True) -> Any:
        """Batch ``index`` of epoch ``epoch`` (see the module docstring)."""
        block = self._block_rows(batch_size)
        n_blocks = math.ceil(self._n / block)
        per_window = max(1, self._window_rows() // block)
        # every block but the last holds whole batches, so batch k of the epoch lies in a known window
        order = np.random.default_rng([seed, epoch]).permutation(n_blocks)
        windows = [np.sort(order[i:i + per_window]) for i in range(0, n_blocks, per_window)]
        first = 0
        for w, blocks in enumerate(windows):
            rows = sum(min(block, self._n - b * block) for b in blocks)
            count = math.ceil(rows / batch_size)
            if index < first + count:
                data, perm = self._load_window((seed, epoch, w), blocks, block)
                local = perm[(index - first) * batch_size:(index - first + 1) * batch_size]
                return data.batch(local) if columns else data.samples(local)
            first += count
        raise IndexError(f"{self.source}: batch {index} of an epoch of {first} batches")

    def _load_window(self, key: tuple[int, int, int], blocks: np.ndarray,
                     block: int) -> tuple[OfflineDataset, np.ndarray]:
        if self._window is not None and self._window[0] == key:
            return self._window[1], self._window[2]
        self._window = None  # the previous window goes before the next is read
        extra = self._nstep[0] - 1 if self._nstep is not None else 0
        parts = []
        with open_hdf5(self.source) as f:
            for b in blocks:
                start, stop = int(b) * block, min((int(b) + 1) * block, self._n)
                piece = self._read(f, start, min(stop + extra, self._n))
                if self._norm is not None:
                    piece.normalize_obs(*self._norm)
                if self._nstep is not None:
                    piece.set_nstep(*self._nstep)
                parts.append((piece, stop - start))
        data = _concat(parts, self.source)
        if self._action_dtype is not None:
            data.action = data.action.reshape(len(data), *self._shapes["action"]).astype(self._action_dtype)
            if self._action_dtype is np.int64:
                data.action = data.action.reshape(len(data))
        perm = np.random.default_rng([key[0], key[1], key[2] + 1]).permutation(len(data))
        self._window = (key, data, perm)
        return data, perm


def _concat(parts: list[tuple[OfflineDataset, int]], source: str) -> OfflineDataset:
    """The first ``rows`` rows of each piece, fields and n-step columns, as one data set."""
    def cat(get: Any) -> np.ndarray:
        return np.concatenate([get(p)[:rows] for p, rows in parts])

    out = OfflineDataset(cat(lambda p: p.obs), cat(lambda p: p.action), cat(lambda p: p.reward),
                         cat(lambda p: p.done), cat(lambda p: p.next_obs), source=source,
                         timeout=cat(lambda p: p.timeout) if parts[0][0].timeout is not None else None)
    if parts[0][0].nstep_columns is not None:
        out.nstep_columns = {k: cat(lambda p, k=k: p.nstep_columns[k]) for k in parts[0][0].nstep_columns}
    return out


def file_bytes_in_memory(path: str) -> int:
    """What loading the HDF5 file ``path`` whole takes: its fields' bytes, uncompressed (observations as
    float32)."""
    with open_hdf5(path) as f:
        names, _ = hdf5_layout(f, path)
        total = 0
        for k, name in names.items():
            itemsize = max(f[name].dtype.itemsize, 4) if k in ("obs", "next_obs") else f[name].dtype.itemsize
            total += int(np.prod(f[name].shape, dtype=np.int64)) * itemsize
        return total
