"""SampleStore: the parallel learner's decoded samples as columns (ding/parallel/roles/learner/sample_store.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding.parallel.roles.learner.sample_store import SampleStore
from ding.utils import DataFileError
from ding.utils.data import ColumnBatch, default_collate


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


def test_rows_are_sized_from_the_byte_cap_not_from_the_first_samples_shape():
    """Issue 36, item 3: a first sample of 8 MiB used to make the store allocate 1024 rows of it (8 GiB) at once."""
    store = SampleStore(20_000, max_bytes=64 * 2**20)
    big = dict(obs=np.zeros(2**21, np.float32), action=np.array(1))
    store.check({"big": big}, "data file 'big'")  # the first sample sets the schema: accepted
    store.put({f"big{i}": big for i in range(20)})
    assert store.held_bytes <= 64 * 2**20 and len(store) <= 8  # the oldest gave way: the cap holds
    assert "big19" in store and "big0" not in store


def test_decoded_bytes_held_are_capped_for_samples_kept_as_dicts_too():
    """Issue 36, item 4: a small file holding one long JSON list kept tens of MiB; six files kept hundreds."""
    store = SampleStore(1000, max_bytes=4 * 2**20)
    for i in range(50):
        store.put({f"f{i}": dict(obs=np.zeros(4, np.float32), tag=list(range(20_000)))})  # ~0.8 MB each
    assert store.held_bytes <= 4 * 2**20 and "f49" in store and "f0" not in store
    with pytest.raises(DataFileError, match=r"data file 'x': sample 'x' decodes to about .* over the learner's "
                                            r"sample_cache_mb \(4 MiB\)"):
        store.check({"x": dict(obs=np.zeros(4, np.float32), tag=list(range(200_000)))}, "data file 'x'")


def test_a_sample_of_another_shape_or_dtype_is_refused_naming_the_field_and_both_shapes():
    """Issue 36, item 5."""
    store = SampleStore(100)
    store.put({"a": _sample(0)})
    with pytest.raises(DataFileError, match=r"data file 'b': field 'obs' of sample 'b' has shape \(3,\) and dtype "
                                            r"float32, the run's samples have shape \(4,\) and dtype float32"):
        store.check({"b": _sample(1, obs=np.zeros(3, np.float32))}, "data file 'b'")
    with pytest.raises(DataFileError, match=r"field 'obs' .* dtype float64"):
        store.check({"c": _sample(1, obs=np.zeros(4, np.float64))}, "data file 'c'")
    store.check({"d": _sample(2, extra_key=1)}, "data file 'd'")  # a field more: kept as a dict, as before
