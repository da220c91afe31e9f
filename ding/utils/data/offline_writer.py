"""Writing offline-RL data sets: HDF5 in DI-engine's layout (or D4RL's) and Minari, atomically, never over a file.

The file appears whole or not at all (written to a temporary file beside it, then renamed); an existing file is
refused unless ``overwrite=True``. Attributes (``behaviour_return``, ``random_return``, ``env``, ...) are stored with
the data so results on it can be reported as normalised scores.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ding.utils.errors import DatasetError
from ding.utils.file_helper import atomic_write

from .offline_dataset import D4RL_NAMES, FIELDS


def transitions_to_arrays(transitions: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Stack a collector's transition dicts into the data-set fields (``timeout`` from their ``truncated`` flag)."""
    if not transitions:
        raise DatasetError("no transitions to write (collect_count must be >= 1)")
    out = {k: np.stack([np.asarray(_numpy(t[k])) for t in transitions]) for k in FIELDS}
    out["reward"] = out["reward"].reshape(len(transitions)).astype(np.float32)
    out["done"] = out["done"].reshape(len(transitions)).astype(bool)
    out["timeout"] = np.array([bool(t.get("truncated", False)) for t in transitions])
    order = trajectory_order(out["obs"], out["next_obs"], out["done"] | out["timeout"])
    return {k: v[order] for k, v in out.items()}


def trajectory_order(obs: np.ndarray, next_obs: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """An order of the rows that puts each env's trajectory together: a collector with several envs returns their
    transitions interleaved, and a row's successor is the later row whose ``obs`` is its ``next_obs``. Episodes
    follow each other as collected; a trajectory cut by the end of the collection is followed by the next one."""
    n = len(obs)
    by_obs: dict[bytes, list[int]] = {}
    for i in range(n - 1, -1, -1):  # (lists hold rows in ascending order once reversed)
        by_obs.setdefault(obs[i].tobytes(), []).append(i)
    successor = np.full(n, -1)
    has_pred = np.zeros(n, dtype=bool)
    for i in range(n):
        if ends[i]:
            continue
        rows = by_obs.get(next_obs[i].tobytes())
        while rows and rows[-1] <= i:
            rows.pop()
        if rows:
            j = rows.pop()
            successor[i], has_pred[j] = j, True
    order: list[int] = []
    for start in np.flatnonzero(~has_pred):
        i = int(start)
        while i >= 0:
            order.append(i)
            i = int(successor[i])
    return np.asarray(order, dtype=np.int64)


def _numpy(x: Any) -> Any:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else x


def _refuse_existing(path: str, overwrite: bool) -> None:
    if os.path.exists(path) and not overwrite:
        raise DatasetError(f"{path}: a data set is already there; give another path, remove it, or pass "
                           "overwrite=True")


def save_hdf5(path: str, arrays: Mapping[str, np.ndarray], attrs: Mapping[str, Any] | None = None, *,
              layout: str = "hdf5", overwrite: bool = False) -> str:
    """Write ``arrays`` (the :data:`FIELDS` and optionally ``timeout``) to ``path``; ``layout='d4rl'`` uses D4RL's
    names. Returns ``path``."""
    try:
        import h5py
    except ImportError:
        raise DatasetError(f"{path}: writing HDF5 data sets needs h5py: pip install -e '.[offline]'") from None
    if layout not in ("hdf5", "d4rl"):
        raise DatasetError(f"{path}: unknown HDF5 layout {layout!r}; use 'hdf5' (DI-engine's names) or 'd4rl'")
    _refuse_existing(path, overwrite)
    names = {v: k for k, v in D4RL_NAMES.items()} if layout == "d4rl" else {k: k for k in (*FIELDS, "timeout")}

    def write(f: Any) -> None:
        with h5py.File(f, "w") as h5:
            for key, value in arrays.items():
                h5.create_dataset(names[key], data=np.asarray(value), compression="gzip", compression_opts=1,
                                  chunks=True)
            for key, value in (attrs or {}).items():
                h5.attrs[key] = value

    atomic_write(path, write)
    return path


def save_minari(dataset_id: str, arrays: Mapping[str, np.ndarray], observation_space: Any, action_space: Any, *,
                attrs: Mapping[str, Any] | None = None, overwrite: bool = False) -> str:
    """Write ``arrays`` as the local Minari data set ``dataset_id`` (episodes split at ``done`` / ``timeout``; a
    trailing incomplete episode ends as truncated). Needs the ``minari`` package."""
    try:
        import minari
        from minari.data_collector import EpisodeBuffer
    except ImportError:
        raise DatasetError(f"Minari data set {dataset_id!r}: writing it needs minari: pip install -e '.[offline]'") \
            from None
    if dataset_id in minari.list_local_datasets():
        if not overwrite:
            raise DatasetError(f"Minari data set {dataset_id!r}: already in the local store; give another id or pass "
                               "overwrite=True")
        minari.delete_dataset(dataset_id)
    n = len(arrays["obs"])
    ends = arrays["done"].astype(bool) | arrays.get("timeout", np.zeros(n, dtype=bool)).astype(bool)
    ends[-1] = True
    buffers: list[Any] = []
    start = 0
    for stop in np.flatnonzero(ends) + 1:
        sl = slice(start, int(stop))
        obs = np.concatenate([arrays["obs"][sl], arrays["next_obs"][int(stop) - 1][None]])
        done = arrays["done"][sl].astype(bool)
        buffers.append(EpisodeBuffer(id=len(buffers), observations=obs, actions=arrays["action"][sl],
                                     rewards=list(arrays["reward"][sl]), terminations=list(done),
                                     truncations=list(~done & (np.arange(start, int(stop)) == int(stop) - 1)),
                                     infos={}))
        start = int(stop)
    extra = {k: v for k, v in (attrs or {}).items() if isinstance(v, (int, float, str))}
    minari.create_dataset_from_buffers(dataset_id=dataset_id, buffer=buffers, observation_space=observation_space,
                                       action_space=action_space, algorithm_name=str(extra.get("policy", "ding")),
                                       description=json.dumps(extra))
    return dataset_id


def offline_data_save_type(exp_data: Sequence[Mapping[str, Any]], expert_data_path: str, data_type: str = "naive",
                           overwrite: bool = False) -> str:
    """DI-engine's writer of collected transitions: ``data_type='hdf5'`` (DI-engine's layout) or ``'d4rl'``, to
    ``expert_data_path`` (DI-engine's ``x.pkl`` becomes ``x_demos.hdf5``). Returns the path written.

    DI-engine's default ``'naive'`` (a pickle) is refused with an error saying what to pass instead: ding never
    writes pickles, which are unsafe to load."""
    if data_type == "naive":
        raise DatasetError(f"offline_data_save_type({expert_data_path!r}): data_type 'naive' (pickle) is not written "
                           "by ding; pass data_type='hdf5' (DI-engine's layout) or 'd4rl'")
    if data_type not in ("hdf5", "d4rl"):
        raise DatasetError(f"offline_data_save_type({expert_data_path!r}): unknown data_type {data_type!r}; use "
                           "'hdf5' or 'd4rl'")
    path = str(expert_data_path)
    if path.endswith(".pkl"):
        path = path[: -len(".pkl")] + "_demos.hdf5"
    return save_hdf5(path, transitions_to_arrays(exp_data), layout=data_type, overwrite=overwrite)
