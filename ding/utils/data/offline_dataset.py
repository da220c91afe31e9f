"""Offline-RL data sets: transitions read from HDF5 (DI-engine's layout or D4RL's), Minari, or a pickle (opt-in).

An :class:`OfflineDataset` holds one numpy array per field (``obs``, ``action``, ``reward``, ``done``, ``next_obs``,
and ``timeout`` where the file has it) and hands out batches as :class:`~ding.utils.data.ColumnBatch` (one gather
per field, no per-sample dicts). :func:`create_dataset` reads ``policy.collect.data_type`` / ``data_path`` as
DI-engine does. Every problem with a file is one :class:`~ding.utils.DatasetError` naming the file and the field.

HDF5 files are read field by field in chunks of :data:`CHUNK_ROWS` rows into arrays allocated once, so a file is
never held twice in memory and a NaN is reported with the row where it was found.
"""
from __future__ import annotations

import logging
import math
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ding.utils.errors import DatasetError

from .column_batch import ColumnBatch

if TYPE_CHECKING:
    from .offline_stream import StreamedHDF5Dataset

logger = logging.getLogger(__name__)

FIELDS = ("obs", "action", "reward", "done", "next_obs")  # DI-engine's hdf5 names, and what a batch holds
# D4RL's names -> ours ('timeouts': the episode was cut by a time limit; bootstrapped, not terminal)
D4RL_NAMES = {"observations": "obs", "actions": "action", "rewards": "reward", "terminals": "done",
              "next_observations": "next_obs", "timeouts": "timeout"}
DATA_TYPES = ("hdf5", "d4rl", "minari", "naive")
CHUNK_ROWS = 65536
HOW_TO_MAKE = ("make one with ding.entry.collect_demo_data (see docs/offline.md); nothing is downloaded")


@dataclass
class OfflineDataset:
    """Transitions as arrays of equal length; ``meta`` holds the file's attributes (e.g. ``behaviour_return``)."""

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray  # (N,) float32
    done: np.ndarray  # (N,) bool: a termination (a time-limit cut is not one)
    next_obs: np.ndarray
    source: str = "<memory>"
    timeout: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    nstep_columns: dict[str, np.ndarray] | None = None  # set by set_nstep: n-step reward, next_obs, done, value_gamma
    _perm: np.ndarray | None = field(default=None, init=False, repr=False)  # the current epoch's shuffle
    _perm_key: tuple[int, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.obs)
        if n == 0:
            raise DatasetError(f"{self.source}: the data set holds no transitions; {HOW_TO_MAKE}")
        for name in ("action", "reward", "done", "next_obs"):
            if len(getattr(self, name)) != n:
                raise DatasetError(f"{self.source}: field '{name}' has {len(getattr(self, name))} rows, 'obs' has "
                                   f"{n}; every field needs one row per transition")
        if self.next_obs.shape != self.obs.shape:
            raise DatasetError(f"{self.source}: field 'next_obs' has shape {self.next_obs.shape[1:]} per row, 'obs' "
                               f"has {self.obs.shape[1:]}")
        for name in ("reward", "done"):
            arr = getattr(self, name)
            if arr.ndim > 1 and int(np.prod(arr.shape[1:])) != 1:
                raise DatasetError(f"{self.source}: field '{name}' has shape {arr.shape[1:]} per row; expected a "
                                   "scalar per transition")
        self.reward = self.reward.reshape(n).astype(np.float32, copy=False)
        self.done = self.done.reshape(n).astype(bool, copy=False)
        if self.action.dtype.kind == "f" and self.action.ndim == 1:
            self.action = self.action.reshape(n, 1)
        self.obs = _as_float32(self.obs)
        self.next_obs = _as_float32(self.next_obs)

    # ------------------------------------------------------------------ DI-engine's Dataset surface
    def __len__(self) -> int:
        return len(self.obs)

    def __getitem__(self, idx: int) -> dict[str, Any]:
        return {k: getattr(self, k)[idx] for k in FIELDS}

    @property
    def mean(self) -> np.ndarray:
        """Per-dimension mean of the observations (DI-engine's name, for ``env.norm_obs.offline_stats``)."""
        return self.obs.mean(0)

    @property
    def std(self) -> np.ndarray:
        """Per-dimension std of the observations plus 1e-3 (DI-engine's epsilon)."""
        return self.obs.std(0) + 1e-3

    # ------------------------------------------------------------------ what the offline loop uses
    def batch(self, indices: np.ndarray) -> ColumnBatch:
        """The transitions at ``indices`` as one :class:`ColumnBatch`."""
        cols = {k: np.take(getattr(self, k), indices, axis=0) for k in FIELDS}
        if self.nstep_columns is not None:
            cols.update({k: np.take(v, indices, axis=0) for k, v in self.nstep_columns.items()})
        return ColumnBatch.from_columns(cols, None, len(indices))

    def samples(self, indices: np.ndarray) -> list[dict[str, Any]]:
        """The transitions at ``indices`` as sample dicts (for policies that do not take a ColumnBatch)."""
        return [self[int(i)] for i in indices]

    def batches_per_epoch(self, batch_size: int) -> int:
        """How many batches one pass over the data makes (the last one may be smaller)."""
        return math.ceil(len(self) / batch_size)

    def epoch_batch(self, seed: int, epoch: int, index: int, batch_size: int, columns: bool = True) -> Any:
        """Batch ``index`` of epoch ``epoch``: each epoch is a fresh shuffle (a function of ``seed`` and ``epoch``)
        cut into ``batch_size`` batches; a :class:`ColumnBatch` (``columns``) or a list of sample dicts."""
        if self._perm is None or self._perm_key != (seed, epoch):
            self._perm = np.random.default_rng([seed, epoch]).permutation(len(self))
            self._perm_key = (seed, epoch)
        idx = self._perm[index * batch_size:(index + 1) * batch_size]
        return self.batch(idx) if columns else self.samples(idx)

    def set_nstep(self, nstep: int, gamma: float) -> None:
        """Give every transition an ``nstep``-step sample (what a collector's ``get_train_sample`` makes): ``reward``
        (N, nstep) with zeros after the episode ends, ``next_obs`` / ``done`` of the window's last step and
        ``value_gamma = gamma ** steps``. Windows stop at ``done``, ``timeout`` and wherever the trajectory breaks
        (:meth:`breaks`)."""
        n = len(self)
        ends = self.done | (self.timeout if self.timeout is not None else np.zeros(n, dtype=bool)) | self.breaks()
        rows = np.arange(n)
        reward = np.zeros((n, nstep), dtype=np.float32)
        last = rows.copy()
        alive = np.ones(n, dtype=bool)
        for k in range(nstep):
            j = np.minimum(rows + k, n - 1)
            valid = alive & (rows + k < n)
            reward[valid, k] = self.reward[j[valid]]
            last[valid] = j[valid]
            alive = valid & ~ends[j]
        steps = last - rows + 1
        self.nstep_columns = {"reward": reward, "next_obs": self.next_obs[last], "done": self.done[last],
                              "value_gamma": (gamma ** steps).astype(np.float32)}

    def normalize_obs(self, mean: np.ndarray, std: np.ndarray) -> None:
        """Replace ``obs`` and ``next_obs`` by ``(x - mean) / std`` (DI-engine's offline statistics)."""
        self.obs = ((self.obs - mean) / std).astype(np.float32)
        self.next_obs = ((self.next_obs - mean) / std).astype(np.float32)
        self.nstep_columns = None

    def episode_returns(self) -> np.ndarray:
        """The return of each complete episode (ended by ``done`` or ``timeout``) in file order."""
        ends = self.done | (self.timeout if self.timeout is not None else False)
        cut = np.flatnonzero(ends | self.breaks())
        total = np.diff(np.cumsum(self.reward, dtype=np.float64)[cut], prepend=0.0)
        return total[ends[cut]]  # a segment cut by the end of the collected data is no complete episode

    def breaks(self) -> np.ndarray:
        """True where a row's ``next_obs`` is not the following row's ``obs`` (the trajectory goes on elsewhere, or
        the data ends there); the last row is always one."""
        out = np.ones(len(self), dtype=bool)
        out[:-1] = np.any((self.next_obs[:-1] != self.obs[1:]).reshape(len(self) - 1, -1), axis=1)
        return out

    def check_fits(self, obs_shape: tuple[int, ...] | None, action_space: Any, policy: str) -> None:
        """Refuse a data set whose observations or actions do not fit the policy's model and the env's action
        space (one error naming the file, the field and both shapes); store actions as the policy reads them."""
        act = self.action.reshape(len(self), -1)
        integral = self.action.dtype.kind in "iub" or bool(np.all(act == np.round(act)))
        summary = ActionSummary(self.action.dtype, tuple(self.action.shape[1:]), float(act.min()), float(act.max()),
                                integral)
        dtype = check_fits(self.source, tuple(self.obs.shape[1:]), summary, obs_shape, action_space, policy)
        self.action = self.action.reshape(len(self)).astype(dtype) if dtype == np.int64 else \
            self.action.astype(dtype, copy=False)


@dataclass(frozen=True)
class ActionSummary:
    """What :func:`check_fits` needs to know of a data set's actions: their dtype, shape per row, range, and
    whether every value is a whole number."""

    dtype: np.dtype
    shape: tuple[int, ...]
    low: float
    high: float
    integral: bool


def check_fits(source: str, obs_row_shape: tuple[int, ...], actions: ActionSummary,
               obs_shape: tuple[int, ...] | None, action_space: Any, policy: str) -> type:
    """Refuse observations of another shape than the model's and actions outside the env's action space (one error
    naming ``source``, the field and both shapes); return the dtype the policy reads actions as."""
    import gymnasium as gym

    if obs_shape is not None and obs_row_shape != tuple(obs_shape):
        raise DatasetError(f"{source}: field 'obs' has shape {obs_row_shape} per row, but policy {policy!r} expects "
                           f"{tuple(obs_shape)} (policy.model.obs_shape)")
    if isinstance(action_space, gym.spaces.Discrete):
        if int(np.prod(actions.shape)) != 1 or not actions.integral:
            raise DatasetError(f"{source}: field 'action' holds {actions.dtype} values of shape {actions.shape}, but "
                               f"policy {policy!r} acts in {action_space} (one integer per transition)")
        lo, hi = int(actions.low), int(actions.high)
        if lo < 0 or hi >= int(action_space.n):
            raise DatasetError(f"{source}: field 'action' ranges over [{lo}, {hi}], outside {action_space}")
        return np.int64
    if isinstance(action_space, gym.spaces.Box):
        if actions.dtype.kind != "f" or actions.shape != tuple(action_space.shape):
            raise DatasetError(f"{source}: field 'action' holds {actions.dtype} values of shape {actions.shape}, but "
                               f"policy {policy!r} acts in {action_space}")
        if actions.low < float(np.min(action_space.low)) - 1e-4 or \
                actions.high > float(np.max(action_space.high)) + 1e-4:
            raise DatasetError(f"{source}: field 'action' ranges over [{actions.low:.3g}, {actions.high:.3g}], "
                               f"outside the policy's action space {action_space} (ding's continuous policies act in "
                               "[-1, 1]; store actions as the policy outputs them, before env.act_scale)")
        return np.float32
    return actions.dtype.type


def _dataset(arrays: Mapping[str, np.ndarray], source: str, meta: dict[str, Any]) -> OfflineDataset:
    return OfflineDataset(arrays["obs"], arrays["action"], arrays["reward"], arrays["done"], arrays["next_obs"],
                          source=source, timeout=arrays.get("timeout"), meta=meta)


def _as_float32(arr: np.ndarray) -> np.ndarray:
    return arr if arr.dtype in (np.float32, np.uint8) else arr.astype(np.float32)


# ---------------------------------------------------------------------------------------------------- readers
def create_dataset(cfg: Mapping[str, Any], **kwargs: Any) -> OfflineDataset | StreamedHDF5Dataset:
    """The data set a config names: ``policy.collect.data_type`` (``'hdf5'`` / ``'d4rl'``, ``'minari'``,
    ``'naive'``) and ``policy.collect.data_path`` (a file, or a Minari dataset id); an HDF5 file whose fields take
    more than ``policy.collect.memory_budget_mb`` is streamed (:class:`StreamedHDF5Dataset`). ``'naive'`` (a
    pickle) needs ``policy.collect.allow_pickle=True``: unpickling a file runs whatever code it holds."""
    collect = cfg["policy"]["collect"]
    data_type = collect.get("data_type") or "hdf5"
    path = collect.get("data_path")
    if not path:
        raise DatasetError(f"policy.collect.data_path: not set; give the data set's path ({HOW_TO_MAKE})")
    if data_type in ("hdf5", "d4rl"):
        from .offline_stream import StreamedHDF5Dataset, file_bytes_in_memory

        budget = collect.get("memory_budget_mb")
        if budget is not None and file_bytes_in_memory(os.fspath(path)) > float(budget) * 2 ** 20:
            return StreamedHDF5Dataset(os.fspath(path), int(float(budget) * 2 ** 20))
        return load_hdf5(os.fspath(path), **kwargs)
    if data_type == "minari":
        return load_minari(str(path))
    if data_type == "naive":
        return load_pickle(os.fspath(path), allow_pickle=bool(collect.get("allow_pickle", False)))
    raise DatasetError(f"policy.collect.data_type: unknown {data_type!r}; use one of {list(DATA_TYPES)}")


def _missing_file(path: str) -> DatasetError:
    return DatasetError(f"{path}: no such data set (policy.collect.data_path); {HOW_TO_MAKE}")


def open_hdf5(path: str) -> Any:
    """``h5py.File(path, 'r')``, or one DatasetError: h5py missing, no such file, not an HDF5 file."""
    try:
        import h5py
    except ImportError:
        raise DatasetError(f"{path}: reading HDF5 data sets needs h5py: pip install -e '.[offline]'") from None
    if not os.path.isfile(path):
        raise _missing_file(path)
    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise DatasetError(f"{path}: not a readable HDF5 file ({e})") from None


def hdf5_layout(f: Any, path: str) -> tuple[dict[str, str], bool]:
    """``({field: name in the file}, is_d4rl)`` for the fields the file has (``timeout`` and D4RL's
    ``next_observations`` optional); a missing field is one DatasetError naming it."""
    d4rl = "observations" in f
    names = {v: k for k, v in D4RL_NAMES.items()} if d4rl else {k: k for k in (*FIELDS, "timeout")}
    needed = [k for k in FIELDS if not (d4rl and k == "next_obs")]
    missing = [names[k] for k in needed if names[k] not in f]
    if missing:
        layout = "D4RL" if d4rl else "DI-engine hdf5"
        raise DatasetError(f"{path}: field(s) {missing} missing ({layout} layout; the file has {sorted(f.keys())})")
    return {k: names[k] for k in (*FIELDS, "timeout") if names[k] in f}, d4rl


def load_hdf5(path: str, chunk_rows: int = CHUNK_ROWS) -> OfflineDataset:
    """A data set from an HDF5 file in DI-engine's layout (``obs, action, reward, done, next_obs``) or D4RL's
    (``observations, actions, rewards, terminals, timeouts[, next_observations]``; without ``next_observations``
    the next observation is the following row, and the last row of each episode is dropped, as D4RL's
    ``qlearning_dataset`` does)."""
    with open_hdf5(path) as f:
        names, d4rl = hdf5_layout(f, path)
        arrays = {k: _read_chunked(f[name], path, name, chunk_rows) for k, name in names.items()}
        meta = {k: _plain(v) for k, v in f.attrs.items()}
    if d4rl and "next_obs" not in arrays:
        arrays = _next_from_following_row(arrays)
    return _dataset(arrays, path, meta)


def _read_chunked(ds: Any, path: str, name: str, chunk_rows: int) -> np.ndarray:
    if ds.ndim == 0:
        raise DatasetError(f"{path}: field '{name}' is a scalar; expected one row per transition")
    if ds.dtype.kind not in "fiub":
        raise DatasetError(f"{path}: field '{name}' holds {ds.dtype} values; expected numbers")
    out = np.empty(ds.shape, dtype=ds.dtype)
    for start in range(0, ds.shape[0], chunk_rows):
        stop = min(start + chunk_rows, ds.shape[0])
        part = out[start:stop]
        ds.read_direct(part, np.s_[start:stop])
        _check_finite(part, path, name, start)
    return out


def _check_finite(arr: np.ndarray, path: str, name: str, offset: int = 0) -> None:
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        row = int(np.flatnonzero(~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1))[0]) + offset
        raise DatasetError(f"{path}: field '{name}' holds NaN or Inf (first at row {row}); the data set is corrupt")


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode()
    return value


def _next_from_following_row(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """D4RL files without ``next_observations``: a row's next observation is the following row's, so rows cut by a
    time limit (and a last row that is not terminal) have none and are dropped; a terminal row's is never used."""
    n = len(arrays["obs"])
    keep = ~arrays.get("timeout", np.zeros(n, dtype=bool)).reshape(n).astype(bool)
    keep[-1] = bool(arrays["done"].reshape(n)[-1])
    idx = np.flatnonzero(keep)
    out = {k: v[idx] for k, v in arrays.items()}
    out["next_obs"] = arrays["obs"][np.minimum(idx + 1, n - 1)]
    return out


def load_pickle(path: str, allow_pickle: bool) -> OfflineDataset:
    """DI-engine's ``naive`` data type: a pickled list of transition dicts. Unpickling runs code, so it is refused
    unless ``allow_pickle`` (``policy.collect.allow_pickle=True``), and then logged as a warning."""
    if not allow_pickle:
        raise DatasetError(f"{path}: data_type 'naive' is a pickle, and unpickling a file runs any code it holds; "
                           "set policy.collect.allow_pickle=True if you trust this file, or convert it to hdf5 "
                           "(ding.utils.data.save_hdf5)")
    if not os.path.isfile(path):
        raise _missing_file(path)
    logger.warning("unpickling the data set %s (policy.collect.allow_pickle=True): only do this with files you trust",
                   path)
    with open(path, "rb") as f:
        data = pickle.load(f)  # noqa: S301  (opted in above)
    if not isinstance(data, list) or not data or not isinstance(data[0], Mapping):
        raise DatasetError(f"{path}: expected a pickled, non-empty list of transition dicts, got {type(data).__name__}")
    missing = [k for k in FIELDS if k not in data[0]]
    if missing:
        raise DatasetError(f"{path}: field(s) {missing} missing (transitions have {sorted(data[0])})")
    arrays = {k: np.stack([np.asarray(_numpy(d[k])) for d in data]) for k in FIELDS}
    for k, v in arrays.items():
        _check_finite(v, path, k)
    return _dataset(arrays, path, {})


def _numpy(x: Any) -> Any:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else x


def load_minari(dataset_id: str) -> OfflineDataset:
    """A Minari data set from the local Minari store (``minari.load_dataset``; nothing is downloaded)."""
    try:
        import minari
    except ImportError:
        raise DatasetError(f"Minari data set {dataset_id!r}: reading it needs minari: pip install -e '.[offline]'") \
            from None
    local = minari.list_local_datasets()
    if dataset_id not in local:
        raise DatasetError(f"Minari data set {dataset_id!r}: not in the local Minari store "
                           f"({sorted(local) or 'empty'}; $MINARI_DATASETS_PATH); write it with "
                           "ding.utils.data.save_minari or collect_demo_data(data_type='minari'); nothing is "
                           "downloaded")
    ds = minari.load_dataset(dataset_id, download=False)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in (*FIELDS, "timeout")}
    for ep in ds.iterate_episodes():
        obs = np.asarray(ep.observations)
        parts["obs"].append(obs[:-1])
        parts["next_obs"].append(obs[1:])
        parts["action"].append(np.asarray(ep.actions))
        parts["reward"].append(np.asarray(ep.rewards, dtype=np.float32))
        parts["done"].append(np.asarray(ep.terminations, dtype=bool))
        parts["timeout"].append(np.asarray(ep.truncations, dtype=bool))
    if not parts["obs"]:
        raise DatasetError(f"Minari data set {dataset_id!r}: holds no episodes")
    arrays = {k: np.concatenate(v) for k, v in parts.items()}
    for k, v in arrays.items():
        _check_finite(v, f"minari:{dataset_id}", k)
    meta = dict(ds.storage.metadata) if hasattr(ds, "storage") else {}
    return _dataset(arrays, f"minari:{dataset_id}", {k: v for k, v in meta.items() if isinstance(v, (int, float, str))})
