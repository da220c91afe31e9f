"""Offline data sets: the formats, the checks (one error naming file and field), atomic writes, n-step samples."""
from __future__ import annotations

import logging
import os
import pickle

import gymnasium as gym
import numpy as np
import pytest

from ding.utils import DatasetError
from ding.utils.data import OfflineDataset, create_dataset, load_hdf5, load_pickle, save_hdf5

h5py = pytest.importorskip("h5py", reason="the 'offline' extra (h5py) is not installed")


def _arrays(n: int = 10, obs_dim: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    done = np.zeros(n, dtype=bool)
    timeout = np.zeros(n, dtype=bool)
    timeout[min(4, n - 1)] = True  # episode 1: rows 0-4 (time limit); episode 2: rows 5-9
    states = rng.normal(size=(n + 1, obs_dim)).astype(np.float32)  # one trajectory: next_obs[i] == obs[i + 1]
    return {"obs": states[:-1], "action": rng.uniform(-1, 1, size=(n, 1)).astype(np.float32),
            "reward": np.arange(n, dtype=np.float32), "done": done, "next_obs": states[1:].copy(),
            "timeout": timeout}


def test_hdf5_round_trip_keeps_fields_and_attributes(tmp_path):
    path = save_hdf5(str(tmp_path / "d.hdf5"), _arrays(), {"behaviour_return": -150.5, "env": "pendulum"})
    ds = load_hdf5(path, chunk_rows=3)  # several chunks
    want = _arrays()
    for k in ("obs", "action", "next_obs"):
        np.testing.assert_array_equal(getattr(ds, k), want[k])
    assert ds.meta == {"behaviour_return": -150.5, "env": "pendulum"}
    assert ds.episode_returns().tolist() == [10.0]  # only the time-limited episode is complete


def test_interleaved_transitions_of_several_envs_are_put_back_into_trajectories():
    from ding.utils.data import transitions_to_arrays

    rng = np.random.default_rng(1)
    trajs = [rng.normal(size=(6, 2)).astype(np.float32) for _ in range(2)]  # two envs, 5 steps each
    rows = []
    for t in range(5):
        for e in range(2):
            rows.append({"obs": trajs[e][t], "next_obs": trajs[e][t + 1], "action": np.float32([0.0]),
                         "reward": np.float32([10 * e + t]), "done": t == 4 and e == 0, "truncated": False})
    out = transitions_to_arrays(rows)
    assert out["reward"].tolist() == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    ds = OfflineDataset(out["obs"], out["action"], out["reward"], out["done"], out["next_obs"],
                        timeout=out["timeout"])
    assert ds.breaks().tolist() == [False] * 4 + [True] + [False] * 4 + [True]
    assert ds.episode_returns().tolist() == [10.0]  # env 1's trajectory is cut by the end of the collection


def test_existing_file_is_never_overwritten_silently(tmp_path):
    path = save_hdf5(str(tmp_path / "d.hdf5"), _arrays())
    before = open(path, "rb").read()
    with pytest.raises(DatasetError, match="already there.*overwrite=True"):
        save_hdf5(path, _arrays(20))
    assert open(path, "rb").read() == before
    save_hdf5(path, _arrays(20), overwrite=True)
    assert len(load_hdf5(path)) == 20
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


def test_d4rl_layout_without_next_observations_uses_the_following_row(tmp_path):
    a = _arrays()
    path = str(tmp_path / "d4rl.hdf5")
    with h5py.File(path, "w") as f:
        f["observations"], f["actions"], f["rewards"] = a["obs"], a["action"], a["reward"]
        f["terminals"], f["timeouts"] = a["done"], a["timeout"]
    ds = load_hdf5(path)
    assert len(ds) == 8  # row 4 (time limit) and row 9 (end of the data, not terminal) have no next observation
    np.testing.assert_array_equal(ds.next_obs[0], a["obs"][1])
    np.testing.assert_array_equal(ds.next_obs[4], a["obs"][6])  # row 5 of the file, the second episode's start


def test_d4rl_layout_with_next_observations(tmp_path):
    path = save_hdf5(str(tmp_path / "d.hdf5"), _arrays(), layout="d4rl")
    with h5py.File(path) as f:
        assert "next_observations" in f and "terminals" in f
    assert len(load_hdf5(path)) == 10


def _write(path, **fields):
    with h5py.File(path, "w") as f:
        for k, v in fields.items():
            f[k] = v


def test_missing_key_names_file_and_field(tmp_path):
    a = _arrays()
    del a["next_obs"]
    path = str(tmp_path / "bad.hdf5")
    _write(path, **a)
    with pytest.raises(DatasetError, match=r"bad\.hdf5: field\(s\) \['next_obs'\] missing"):
        load_hdf5(path)


def test_nan_names_file_field_and_row(tmp_path):
    a = _arrays()
    a["reward"][7] = np.nan
    path = str(tmp_path / "nan.hdf5")
    _write(path, **a)
    with pytest.raises(DatasetError, match=r"nan\.hdf5: field 'reward' holds NaN or Inf \(first at row 7\)"):
        load_hdf5(path, chunk_rows=3)


def test_wrong_shape_names_file_and_field(tmp_path):
    a = _arrays()
    a["next_obs"] = a["next_obs"][:, :2]
    path = str(tmp_path / "shape.hdf5")
    _write(path, **a)
    with pytest.raises(DatasetError, match=r"shape\.hdf5: field 'next_obs' has shape \(2,\)"):
        load_hdf5(path)
    a = _arrays()
    a["action"] = a["action"][:7]
    _write(path, **a)
    with pytest.raises(DatasetError, match="field 'action' has 7 rows"):
        load_hdf5(path)


def test_wrong_action_space_names_file_and_field(tmp_path):
    ds = load_hdf5(save_hdf5(str(tmp_path / "cont.hdf5"), _arrays()))
    with pytest.raises(DatasetError, match=r"cont\.hdf5: field 'action' holds float32 .* acts in Discrete\(2\)"):
        ds.check_fits((3,), gym.spaces.Discrete(2), "bc")
    with pytest.raises(DatasetError, match=r"field 'action' .* acts in Box"):
        ds.check_fits((3,), gym.spaces.Box(-1, 1, (2,)), "cql")
    with pytest.raises(DatasetError, match=r"field 'obs' has shape \(3,\) per row, but policy 'cql' expects \(4,\)"):
        ds.check_fits((4,), gym.spaces.Box(-1, 1, (1,)), "cql")
    a = _arrays()
    a["action"] = a["action"] * 2  # unscaled torques in [-2, 2]
    ds = load_hdf5(save_hdf5(str(tmp_path / "torque.hdf5"), a))
    with pytest.raises(DatasetError, match="outside the policy's action space"):
        ds.check_fits((3,), gym.spaces.Box(-1, 1, (1,)), "td3_bc")
    a = _arrays()
    a["action"] = np.array([0, 1, 2, 1, 0, 1, 0, 1, 0, 1])
    ds = load_hdf5(save_hdf5(str(tmp_path / "disc.hdf5"), a))
    with pytest.raises(DatasetError, match=r"ranges over \[0, 2\], outside Discrete\(2\)"):
        ds.check_fits((3,), gym.spaces.Discrete(2), "discrete_cql")


def test_missing_data_set_says_how_to_make_one(tmp_path):
    cfg = {"policy": {"collect": {"data_type": "hdf5", "data_path": str(tmp_path / "none.hdf5")}}}
    with pytest.raises(DatasetError, match=r"none\.hdf5: no such data set .*collect_demo_data"):
        create_dataset(cfg)
    with pytest.raises(DatasetError, match="data_path: not set"):
        create_dataset({"policy": {"collect": {"data_type": "hdf5"}}})
    with pytest.raises(DatasetError, match="unknown 'parquet'"):
        create_dataset({"policy": {"collect": {"data_type": "parquet", "data_path": "x"}}})


def test_pickle_needs_an_explicit_opt_in_and_warns(tmp_path, caplog):
    a = _arrays(4)
    path = str(tmp_path / "demo.pkl")
    with open(path, "wb") as f:
        pickle.dump([{k: a[k][i] for k in a} for i in range(4)], f)
    cfg = {"policy": {"collect": {"data_type": "naive", "data_path": path}}}
    with pytest.raises(DatasetError, match="unpickling a file runs any code.*allow_pickle=True"):
        create_dataset(cfg)
    cfg["policy"]["collect"]["allow_pickle"] = True
    with caplog.at_level(logging.WARNING, logger="ding.utils.data.offline_dataset"):
        ds = create_dataset(cfg)
    assert len(ds) == 4 and "only do this with files you trust" in caplog.text
    assert isinstance(load_pickle(path, allow_pickle=True), OfflineDataset)


def test_nstep_samples_stop_at_episode_ends():
    a = _arrays()
    ds = OfflineDataset(a["obs"], a["action"], a["reward"], a["done"], a["next_obs"], timeout=a["timeout"])
    ds.set_nstep(3, gamma=0.5)
    cols = ds.nstep_columns
    assert cols is not None
    assert cols["reward"][0].tolist() == [0.0, 1.0, 2.0]
    assert cols["reward"][3].tolist() == [3.0, 4.0, 0.0]  # row 4 ends the episode (time limit)
    assert cols["value_gamma"][3] == pytest.approx(0.25)
    np.testing.assert_array_equal(cols["next_obs"][3], a["next_obs"][4])
    assert cols["reward"][9].tolist() == [9.0, 0.0, 0.0]  # the end of the data
    batch = ds.batch(np.array([3, 0]))
    assert batch.column("reward").shape == (2, 3) and batch.column("value_gamma").shape == (2,)


def test_minari_round_trip(tmp_path, monkeypatch):
    pytest.importorskip("minari", reason="the 'offline' extra (minari) is not installed")
    from ding.utils.data import load_minari, save_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    a = _arrays()
    a["done"][9] = True
    save_minari("ding-test/pendulum-v0", a, gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
                gym.spaces.Box(-1, 1, (1,), np.float32), attrs={"behaviour_return": -1.0})
    ds = load_minari("ding-test/pendulum-v0")
    assert len(ds) == 10
    np.testing.assert_allclose(ds.obs, a["obs"])
    np.testing.assert_allclose(ds.next_obs[4], a["next_obs"][4])
    assert ds.done.tolist() == a["done"].tolist() and ds.timeout is not None and ds.timeout[4]
    with pytest.raises(DatasetError, match="already in the local store"):
        save_minari("ding-test/pendulum-v0", a, None, None)
    with pytest.raises(DatasetError, match=r"'ding-test/none-v0': not in the local Minari.*nothing is downloaded"):
        load_minari("ding-test/none-v0")


def test_offline_data_save_type_writes_di_engine_hdf5_and_refuses_pickles(tmp_path):
    import torch

    from ding.utils.data import offline_data_save_type

    transitions = [{"obs": torch.full((3, ), float(i)), "action": torch.tensor([i % 2]), "reward": torch.tensor([1.0]),
                    "done": i == 3, "next_obs": torch.full((3, ), float(i + 1))} for i in range(4)]
    path = offline_data_save_type(transitions, str(tmp_path / "expert.pkl"), data_type="hdf5")
    assert path == str(tmp_path / "expert_demos.hdf5")  # DI-engine's name for the HDF5 file of x.pkl
    ds = load_hdf5(path)
    np.testing.assert_array_equal(ds.obs[:, 0], [0, 1, 2, 3])
    assert ds.done.tolist() == [False, False, False, True]
    with pytest.raises(DatasetError, match="data_type 'naive' \\(pickle\\) is not written by ding"):
        offline_data_save_type(transitions, str(tmp_path / "x.pkl"))
    with pytest.raises(DatasetError, match="unknown data_type 'csv'"):
        offline_data_save_type(transitions, str(tmp_path / "x.pkl"), data_type="csv")
    assert not (tmp_path / "x.pkl").exists()
