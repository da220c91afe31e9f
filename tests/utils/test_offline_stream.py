"""A data set larger than the memory budget is streamed from its HDF5 file a window at a time: every row once per
epoch, windows within the budget, the same n-step samples and checks as a loaded data set, exact resume."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding.utils import DatasetError
from ding.utils.data import OfflineDataset, StreamedHDF5Dataset, create_dataset, load_hdf5, save_hdf5

pytest.importorskip("h5py", reason="the 'offline' extra (h5py) is not installed")

N = 1000


def _file(tmp_path, n: int = N, nan_row: int | None = None, name: str = "d.hdf5") -> str:
    """CartPole-like transitions: episodes of 37 steps in one trajectory; ``reward`` is the row's index."""
    rng = np.random.default_rng(0)
    states = rng.normal(size=(n + 1, 4)).astype(np.float32)
    done = np.zeros(n, dtype=bool)
    done[36::37] = True
    if nan_row is not None:
        states[nan_row, 2] = np.nan
    arrays = {"obs": states[:-1], "action": (states[:-1, 0] > 0).astype(np.int64),
              "reward": np.arange(n, dtype=np.float32), "done": done, "next_obs": states[1:].copy()}
    return save_hdf5(str(tmp_path / name), arrays, {"behaviour_return": 37.0})


def _col(batch, field: str) -> np.ndarray:
    return batch.column(field).numpy()


def _stream(path: str, budget_bytes: int = 16_000) -> StreamedHDF5Dataset:
    ds = StreamedHDF5Dataset(path, budget_bytes)
    ds.check_fits((4,), gym.spaces.Discrete(2), "discrete_cql")
    return ds


def test_a_file_larger_than_the_budget_is_streamed_and_one_epoch_visits_every_row_once(tmp_path):
    path = _file(tmp_path)
    ds = create_dataset({"policy": {"collect": {"data_type": "hdf5", "data_path": path, "memory_budget_mb": 0.02}}})
    assert isinstance(ds, StreamedHDF5Dataset) and len(ds) == N and ds.meta["behaviour_return"] == 37.0
    ds.check_fits((4,), gym.spaces.Discrete(2), "discrete_cql")
    batches = [ds.epoch_batch(0, 0, i, 32) for i in range(ds.batches_per_epoch(32))]
    rows = np.concatenate([_col(b, "reward") for b in batches]).astype(int)
    assert sorted(rows.tolist()) == list(range(N))  # each row once
    assert rows.tolist() != list(range(N))  # shuffled
    assert all(len(b) == 32 for b in batches[:-1]) and ds.batches_per_epoch(32) == 32
    window = ds._window[1]  # the window in memory holds half the budget at most
    assert len(window) * ds.row_bytes() <= ds.memory_budget_bytes // 2 < len(load_hdf5(path)) * ds.row_bytes()
    other = [_col(ds.epoch_batch(0, 1, i, 32), "reward") for i in range(ds.batches_per_epoch(32))]
    assert np.concatenate(other).astype(int).tolist() != rows.tolist()  # each epoch its own shuffle


def test_a_file_within_the_budget_is_loaded(tmp_path):
    path = _file(tmp_path)
    for budget in (1.0, None):  # None: always loaded
        ds = create_dataset({"policy": {"collect": {"data_path": path, "memory_budget_mb": budget}}})
        assert isinstance(ds, OfflineDataset) and len(ds) == N


def test_streamed_batches_are_the_loaded_data_sets_rows_with_the_same_nstep_samples(tmp_path):
    path = _file(tmp_path)
    ds = _stream(path)
    ds.set_nstep(3, 0.9)
    whole = load_hdf5(path)
    whole.set_nstep(3, 0.9)
    for i in range(ds.batches_per_epoch(32)):
        b = ds.epoch_batch(5, 2, i, 32)
        rows = _col(b, "reward")[:, 0].astype(int)  # the n-step reward's first step is the row's own: its index
        ref = whole.batch(rows)
        for k in ("obs", "action", "reward", "next_obs", "done", "value_gamma"):
            np.testing.assert_array_equal(_col(b, k), _col(ref, k), err_msg=k)


def test_the_same_position_gives_the_same_batch_in_a_fresh_reader(tmp_path):
    path = _file(tmp_path)
    a, b = _stream(path), _stream(path)
    for epoch, index in ((0, 3), (1, 0), (0, 31), (3, 17)):
        np.testing.assert_array_equal(_col(a.epoch_batch(7, epoch, index, 32), "reward"),
                                      _col(b.epoch_batch(7, epoch, index, 32), "reward"))


def test_streaming_normalises_observations_like_the_loaded_data_set(tmp_path):
    path = _file(tmp_path)
    ds, whole = _stream(path), load_hdf5(path)
    np.testing.assert_allclose(ds.mean, whole.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ds.std, whole.std, rtol=1e-4)
    ds.normalize_obs(whole.mean, whole.std)
    whole.normalize_obs(whole.mean, whole.std)
    b = ds.epoch_batch(0, 0, 4, 32)
    np.testing.assert_array_equal(_col(b, "obs"), _col(whole.batch(_col(b, "reward").astype(int)), "obs"))


def test_streaming_checks_the_file_like_loading_does(tmp_path):
    with pytest.raises(DatasetError, match=r"d.hdf5: field 'obs' holds NaN or Inf \(first at row 700\)"):
        StreamedHDF5Dataset(_file(tmp_path, nan_row=700), 16_000)
    path = _file(tmp_path, name="ok.hdf5")
    ds = StreamedHDF5Dataset(path, 16_000)
    with pytest.raises(DatasetError, match="field 'action' ranges over \\[0, 1\\], outside Discrete\\(1\\)"):
        ds.check_fits((4,), gym.spaces.Discrete(1), "discrete_cql")
    with pytest.raises(DatasetError, match="policy.collect.memory_budget_mb .* fewer than one batch"):
        StreamedHDF5Dataset(path, 2_000).epoch_batch(0, 0, 0, 64)


def test_sample_dicts_for_policies_that_do_not_take_columns(tmp_path):
    ds = _stream(_file(tmp_path))
    samples = ds.epoch_batch(0, 0, 0, 32, columns=False)
    assert len(samples) == 32 and isinstance(samples[0], dict) and samples[0]["obs"].shape == (4,)
    assert all(isinstance(s["action"], np.integer) for s in samples)  # stored as the policy reads them
