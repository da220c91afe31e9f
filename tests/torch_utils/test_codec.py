"""The safe sample format of parallel mode: round trips, no pickle, damage detected."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

from ding.torch_utils import decode, encode, load_file, save_file
from ding.utils import DataFileError


def _sample():
    return {
        "obs": np.arange(4, dtype=np.float32),
        "next_obs": torch.tensor([1.0, 2.0, 3.0, 4.0]),
        "action": np.int64(1),
        "reward": np.array([1.0], dtype=np.float32),
        "done": False,
        "truncated": True,
        "collect_iter": 7,
        "value_gamma": 0.97,
        "tag": "x",
        "none": None,
        "nested": {"a": [np.zeros((2, 3), dtype=np.uint8), (1, 2.5)], 3: "int key"},
        "empty": np.zeros((0, 4), dtype=np.float64),
        "nan": float("nan"),
    }


@pytest.mark.parametrize("compress", [True, False])
def test_round_trip_keeps_types_values_and_dtypes(compress):
    s = _sample()
    out = decode(encode(s, compress=compress))
    assert set(out) == set(s)
    assert out["obs"].dtype == np.float32 and np.array_equal(out["obs"], s["obs"])
    assert isinstance(out["next_obs"], torch.Tensor) and torch.equal(out["next_obs"], s["next_obs"])
    assert isinstance(out["action"], np.int64) and out["action"] == 1
    assert out["done"] is False and out["truncated"] is True and out["collect_iter"] == 7
    assert out["tag"] == "x" and out["none"] is None and np.isnan(out["nan"])
    assert out["nested"][3] == "int key" and out["nested"]["a"][1] == (1, 2.5)
    assert out["nested"]["a"][0].shape == (2, 3) and out["nested"]["a"][0].dtype == np.uint8
    assert out["empty"].shape == (0, 4)
    out["obs"][0] = 5.0  # arrays are writable copies, not views of the file bytes


def test_unsupported_types_are_refused_with_the_key_path():
    class Thing:
        pass

    with pytest.raises(TypeError, match=r"sample\.info\.x: cannot store a .*Thing"):
        encode({"info": {"x": Thing()}})
    with pytest.raises(TypeError, match="object arrays"):
        encode({"o": np.array([{}, 1], dtype=object)})


def test_pickle_and_damaged_bytes_are_rejected(tmp_path):
    data = encode(_sample())
    with pytest.raises(DataFileError, match="not a ding data file"):
        decode(pickle.dumps(_sample()), where="f1")
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0xFF
    with pytest.raises(DataFileError, match="f2: checksum mismatch"):
        decode(bytes(flipped), where="f2")
    with pytest.raises(DataFileError, match="checksum mismatch"):
        decode(data[:-3], where="f3")


def test_save_and_load_file_atomically(tmp_path):
    path = str(tmp_path / "d" / "sample_1")
    size = save_file(_sample(), path)
    assert size == os.path.getsize(path)
    assert load_file(path)["collect_iter"] == 7
    assert os.listdir(tmp_path / "d") == ["sample_1"]  # no temp file left behind
    with pytest.raises(DataFileError, match="not found"):
        load_file(str(tmp_path / "missing"))
    with pytest.raises(DataFileError, match="is a directory"):
        load_file(str(tmp_path / "d"))
