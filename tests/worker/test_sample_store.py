"""SampleStore: the parallel learner's decoded samples as columns (ding/worker/learner/comm/sample_store.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding.utils.data import ColumnBatch, default_collate
from ding.worker.learner.comm.sample_store import SampleStore


def _sample(i, **over):
    s = dict(obs=np.full(4, i, np.float32), action=np.array(i % 2), reward=np.array([float(i)], np.float32),
             done=i % 3 == 0, collect_iter=i, weight=0.5 * i, logit=np.float32(i))
    s.update(over)
    return s


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a == b


def test_a_batch_of_kept_samples_is_what_stacking_them_gives():
    store = SampleStore(100)
    samples = {f"f:{i}": _sample(i) for i in range(10)}
    store.put(samples)
    ids = ["f:7", "f:2", "f:7", "f:0"]
    extra = {"IS": [0.1, 0.2, 0.3, 0.4], "replay_unique_id": ["a", "b", "c", "d"], "collect_iter": [9, 9, 9, 9]}
    batch = store.batch(ids, extra)
    expect = ColumnBatch.from_samples([samples[i] for i in ids], extra)
    assert len(batch) == 4 and set(batch.keys()) == set(expect.keys())
    for key in expect.keys():
        assert _same(batch.column(key), expect.column(key)), key
    assert batch.column("collect_iter").tolist() == [9, 9, 9, 9]  # extra fields win
    assert batch.column("reward").shape == (4,)  # (1,)-shaped fields squeeze as default_collate's
    got = store.get("f:2")
    assert set(got) == set(samples["f:2"])
    for key, value in samples["f:2"].items():
        assert _same(default_collate([got[key]]), default_collate([value])), key


def test_samples_that_do_not_fit_the_columns_are_kept_as_dicts_and_stack_the_slow_way():
    store = SampleStore(100)
    store.put({"a": _sample(0), "b": _sample(1, obs=np.zeros(3, np.float32)), "c": _sample(2, extra_key=1)})
    store.put({"d": {k: v for k, v in _sample(3).items() if k != "done"}})
    assert all(i in store for i in "abcd") and len(store) == 4
    assert store.get("b")["obs"].shape == (3,) and store.get("c")["extra_key"] == 1
    with pytest.raises(ValueError, match="different shapes"):
        store.batch(["a", "b"]).column("obs")
    assert store.batch(["a", "c"]).column("obs").shape == (2, 4)
    with pytest.raises(KeyError):
        store.batch(["a", "d"]).column("done")
    with pytest.raises(KeyError, match="not kept"):
        store.batch(["a", "zz"])
    strings = SampleStore(10)  # a field that is no column: every sample stays a dict
    strings.put({"s": dict(obs=np.zeros(2, np.float32), tag="x")})
    assert strings.batch(["s", "s"]).column("tag") == ["x", "x"]


def test_the_store_grows_to_its_capacity_then_lets_the_oldest_go():
    store = SampleStore(1500)
    store.put({f"{i}": _sample(i) for i in range(1000)})
    store.put({f"{i}": _sample(i) for i in range(1000, 2000)})
    assert len(store) == 1500 and "499" not in store and "500" in store and "1999" in store
    assert store.batch(["500", "1999"]).column("obs")[:, 0].tolist() == [500.0, 1999.0]
    store.put({"0": _sample(7)})  # the next oldest (500) goes
    assert "500" not in store and store.get("0")["collect_iter"] == 7
    none = SampleStore(0)
    none.put({"x": _sample(1)})
    assert "x" not in none and len(none) == 0
