"""Utilities: dict merging, seeding, RNG snapshots, atomic writes, collate/decollate."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch

from ding.torch_utils import default_collate, default_decollate, to_ndarray, to_tensor
from ding.utils import atomic_write, deep_merge_dicts, get_rng_state, set_pkg_seed, set_rng_state


def test_deep_merge_does_not_touch_inputs():
    a = {"x": 1, "n": {"y": 2, "z": 3}}
    b = {"n": {"y": 20}, "w": 4}
    merged = deep_merge_dicts(a, b)
    assert merged == {"x": 1, "n": {"y": 20, "z": 3}, "w": 4}
    assert a == {"x": 1, "n": {"y": 2, "z": 3}} and b == {"n": {"y": 20}, "w": 4}
    assert merged.n.y == 20  # EasyDict access


def test_seed_and_rng_snapshot_reproduce_draws():
    set_pkg_seed(7)
    state = get_rng_state()
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    set_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "data.bin"
    atomic_write(str(path), b"good")

    def broken(f):
        f.write(b"partial")
        raise RuntimeError("crash while writing")

    with pytest.raises(RuntimeError, match="crash"):
        atomic_write(str(path), broken)
    assert path.read_bytes() == b"good"
    assert os.listdir(tmp_path) == ["data.bin"]


def test_collate_one_stack_per_field_and_back():
    samples = [{"obs": np.full(4, i, np.float32), "reward": np.array([i], np.float32), "action": np.int64(i),
                "done": bool(i % 2), "name": f"s{i}"} for i in range(5)]
    batch = default_collate(samples)
    assert batch["obs"].shape == (5, 4) and batch["obs"].dtype == torch.float32
    assert batch["reward"].shape == (5,)  # shape-(1,) fields become (B,)
    assert batch["action"].tolist() == [0, 1, 2, 3, 4] and batch["action"].dtype == torch.int64
    assert batch["done"].dtype == torch.bool
    assert batch["name"] == ["s0", "s1", "s2", "s3", "s4"]
    back = default_decollate({k: v for k, v in batch.items() if k != "name"})
    assert len(back) == 5 and torch.equal(back[3]["obs"], torch.full((4,), 3.0))


def test_collate_errors_name_the_problem():
    with pytest.raises(ValueError, match="empty batch"):
        default_collate([])
    with pytest.raises(ValueError, match=r"different shapes \[\(3,\), \(4,\)\]"):
        default_collate([np.zeros(4), np.zeros(3)])


def test_tensor_ndarray_round_trip():
    data = {"a": np.arange(3), "b": [np.ones(2), 1.5]}
    t = to_tensor(data)
    assert isinstance(t["a"], torch.Tensor) and isinstance(t["b"][0], torch.Tensor)
    back = to_ndarray(t)
    assert np.array_equal(back["a"], np.arange(3))
