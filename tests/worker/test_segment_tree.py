"""Sum and min segment trees: batched updates and prefix-sum search against brute force.

Every test runs twice: with the compiled loops (``_segtree.c``, where the install built them) and with the numpy
forms (``DING_NATIVE_TREES=0``); the two must agree with brute force, so they agree with each other.
"""
from __future__ import annotations

import math
import shutil
import sysconfig

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ding.worker.replay_buffer import MinSegmentTree, SumSegmentTree, segment_tree


@pytest.fixture(scope="module", autouse=True, params=["native", "numpy"])
def tree_form(request):
    """Which form the trees built in a test use (module scope: hypothesis's tests take no function fixtures)."""
    if request.param == "native" and not segment_tree.native_available():
        # test_the_compiled_trees_are_built fails where a compiler was there to build them; this form is not here
        pytest.skip("the compiled segment tree is not built on this machine (no C compiler at install)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DING_NATIVE_TREES", "1" if request.param == "native" else "0")
        yield request.param


def test_trees_use_the_form_asked_for(tree_form):
    assert SumSegmentTree(8).native == (tree_form == "native")
    assert MinSegmentTree(8).native == (tree_form == "native")


def test_the_compiled_trees_are_built():
    """`pip install -e .` builds the extension wherever a C compiler is present (the README's set-up on CI)."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on this machine: the numpy form is the one in use")
    assert segment_tree.native_available(), (
        "ding.worker.replay_buffer._segtree is not built although a C compiler is present: reinstall with "
        "`pip install -e .` and read its build output")


def test_native_rejects_wrong_arrays_instead_of_crashing(tree_form):
    if tree_form != "native":
        return
    native = segment_tree._NATIVE_MODULE
    tree = np.zeros(16)
    with pytest.raises(TypeError, match="int64"):
        native.sum_set(tree, np.array([1, 2], dtype=np.int32), np.ones(2))
    with pytest.raises(TypeError, match="float64"):
        native.sum_set(tree, np.array([1, 2]), np.ones(2, dtype=np.float32))
    with pytest.raises(ValueError, match="2 indices and 3 values"):
        native.sum_set(tree, np.array([1, 2]), np.ones(3))
    with pytest.raises(IndexError, match="out of range"):
        native.sum_set(tree, np.array([8]), np.ones(1))
    with pytest.raises(ValueError, match="power of two"):
        native.sum_set(np.zeros(12), np.array([1]), np.ones(1))
    with pytest.raises(ValueError, match="no mass"):
        native.sum_find(tree, np.ones(2), np.zeros(2, dtype=np.int64))
    read_only = np.zeros(16)
    read_only.flags.writeable = False
    with pytest.raises((BufferError, ValueError), match="(?i)writ|read-only"):
        native.sum_set(read_only, np.array([1]), np.ones(1))
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        native.sum_find(tree, np.ones(4)[::2], np.zeros(2, dtype=np.int64))
    with pytest.raises(IndexError, match="out of range"):
        native.min_set(np.zeros(8), np.array([-1]), np.ones(1), 0.0, 8)
    assert tree.sum() == 0  # nothing was written by the failed calls


def test_native_sum_tree_keeps_every_node_the_exact_sum_of_its_children(tree_form):
    if tree_form != "native":
        return
    rng = np.random.default_rng(7)
    tree = SumSegmentTree(1024)
    for _ in range(50):
        idx = np.unique(rng.integers(0, 1024, 64))
        tree.update_unique(idx, rng.random(idx.size) * 10.0 ** rng.integers(-6, 6))
    nodes = tree._tree.copy()
    tree.rebuild()
    np.testing.assert_array_equal(nodes, tree._tree)  # bit for bit: a rebuild changes nothing


def _brute_find(leaves: np.ndarray, r: np.ndarray) -> np.ndarray:
    positive = np.flatnonzero(leaves > 0)
    k = np.searchsorted(np.cumsum(leaves[positive]), r, side="right")
    return positive[np.minimum(k, positive.size - 1)]


@pytest.mark.parametrize("capacity", [1, 2, 8, 1024, 4096])
def test_sum_tree_matches_brute_force(capacity):
    rng = np.random.default_rng(capacity)
    tree = SumSegmentTree(capacity)
    leaves = np.zeros(capacity)
    for _ in range(20):
        idx = rng.integers(0, capacity, size=min(capacity, 50))
        values = rng.random(idx.size) * (rng.random(idx.size) > 0.3)  # some zero leaves (holes)
        tree.update(idx, values)
        for i, v in zip(idx, values):  # the sequential meaning of a batched update: last write wins
            leaves[i] = v
    if leaves.sum() == 0:
        leaves[0] = 1.0
        tree.update([0], [1.0])
    np.testing.assert_allclose(tree.values, leaves)
    assert tree.sum() == pytest.approx(leaves.sum(), rel=1e-12)
    bounds = rng.integers(0, capacity + 1, size=30)
    np.testing.assert_allclose(tree.prefix_sum(bounds), [leaves[:b].sum() for b in bounds], rtol=1e-12, atol=1e-12)
    start, end = sorted(rng.integers(0, capacity + 1, size=2))
    assert tree.sum(start, end) == pytest.approx(leaves[start:end].sum(), rel=1e-9, abs=1e-12)
    r = rng.random(200) * tree.sum()
    np.testing.assert_array_equal(tree.find_prefixsum_idx(r), _brute_find(leaves, r))


def test_find_never_returns_an_empty_leaf_even_at_boundaries():
    tree = SumSegmentTree(16)
    leaves = np.array([0, 1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0], dtype=float)
    tree.update(np.arange(16), leaves)
    cumulative = np.cumsum(leaves)
    r = np.concatenate([cumulative, cumulative - 1e-12, [0.0, tree.sum(), tree.sum() * 2]])
    found = tree.find_prefixsum_idx(r)
    assert (leaves[found] > 0).all()
    assert found[-1] == 9 and found[-2] == 9  # at or beyond the total: the last non-zero leaf


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=64),
       st.lists(st.floats(min_value=0, max_value=1, exclude_max=True), min_size=1, max_size=20))
def test_find_is_consistent_with_cumulative_sums(values, fractions):
    capacity = 1 << (len(values) - 1).bit_length()
    tree = SumSegmentTree(capacity)
    tree.update(np.arange(len(values)), values)
    leaves = np.zeros(capacity)
    leaves[:len(values)] = values
    if leaves.sum() == 0:
        with pytest.raises(ValueError, match="holds no mass"):
            tree.find_prefixsum_idx([0.0])
        return
    r = np.array(fractions) * tree.sum()
    found = tree.find_prefixsum_idx(r)
    assert (leaves[found] > 0).all()
    cumulative = np.cumsum(leaves)
    lower = cumulative[found] - leaves[found]
    assert (lower <= r * (1 + 1e-9) + 1e-9).all() and (r <= cumulative[found] * (1 + 1e-9) + 1e-9).all()


def test_many_delta_updates_stay_exact_after_rebuilds():
    rng = np.random.default_rng(0)
    tree = SumSegmentTree(256)
    for _ in range(300):  # 300 * 64 writes: dozens of automatic exact rebuilds
        idx = rng.integers(0, 256, 64)
        tree.update(idx, rng.random(64) * 10.0 ** rng.integers(-6, 6))
    assert tree.sum() == pytest.approx(tree.values.sum(), rel=1e-12)
    tree.update(np.arange(256), np.full(256, 1e-6))  # all tiny after huge values: no leftover from the big era
    assert tree.sum() == pytest.approx(256e-6, rel=1e-9)


def test_repeated_index_keeps_the_last_value():
    for tree in (SumSegmentTree(8), MinSegmentTree(8)):
        tree.update([3, 3, 5, 3], [1.0, 2.0, 4.0, 7.0])
        assert tree[3] == 7.0 and tree[5] == 4.0
    s = SumSegmentTree(8)
    s.update([3, 3, 5, 3], [1.0, 2.0, 4.0, 7.0])
    assert s.sum() == 11.0


@pytest.mark.parametrize("capacity", [1, 4, 64, 4096, 1 << 15])
def test_min_tree_matches_brute_force(capacity):
    rng = np.random.default_rng(1)
    tree = MinSegmentTree(capacity)
    leaves = np.full(capacity, np.inf)
    assert tree.min() == np.inf
    for _ in range(30):
        idx = rng.integers(0, capacity, size=min(capacity, 64))
        values = np.where(rng.random(idx.size) < 0.2, np.inf, rng.random(idx.size) + 0.5)
        tree.update(idx, values)
        for i, v in zip(idx, values):
            leaves[i] = v
        assert tree.min() == leaves.min()
    start, end = sorted(rng.integers(0, capacity + 1, size=2))
    assert tree.min(start, end) == (leaves[start:end].min() if end > start else np.inf)


@pytest.mark.parametrize("capacity", [1 << 14, 1 << 19])  # one / two levels large enough for incremental updates
def test_min_tree_when_the_minimum_leaves_are_raised(capacity):
    """Raising the leaves that hold the minimum (priority updates of sampled items, removals) forces rescans; ties
    (several leaves holding a block's minimum) are the tricky case of the incremental update."""
    rng = np.random.default_rng(5)
    tree = MinSegmentTree(capacity)
    leaves = np.full(capacity, np.inf)
    for _ in range(200):
        idx = np.unique(rng.integers(0, capacity, 64))
        values = np.where(rng.random(idx.size) < 0.2, np.inf, rng.integers(1, 30, idx.size).astype(float))
        tree.update(idx, values)
        leaves[idx] = values
        assert tree.min() == leaves.min()
        holders = np.flatnonzero(leaves == leaves.min())[:64]
        raised = np.where(rng.random(holders.size) < 0.5, np.inf, leaves[holders] + rng.integers(0, 3, holders.size))
        tree.update(holders, raised)
        leaves[holders] = raised
        assert tree.min() == leaves.min()
    np.testing.assert_array_equal(tree.values, leaves)


def test_min_tree_with_many_leaves_at_the_minimum():
    """Equal priorities (a fresh buffer: every item at the max priority) make every leaf a holder of the minimum; the
    minimum must rise only when the last holder is raised, and fall at once when any leaf goes below it."""
    tree = MinSegmentTree(256)
    leaves = np.full(256, 2.0)
    tree.update(np.arange(256), leaves)
    for start in range(0, 256, 64):
        idx = np.arange(start, start + 64)
        tree.update(idx, np.full(64, 3.0))
        leaves[idx] = 3.0
        assert tree.min() == leaves.min()
    assert tree.min() == 3.0
    tree.update([7], [0.5])
    assert tree.min() == 0.5
    tree.update([7, 9], [np.inf, 0.5])  # the holder moves: still one leaf at 0.5
    assert tree.min() == 0.5
    tree.update([9], [np.inf])
    assert tree.min() == 3.0


def test_state_dict_round_trip():
    rng = np.random.default_rng(3)
    s, m = SumSegmentTree(64), MinSegmentTree(64)
    idx, values = rng.integers(0, 64, 40), rng.random(40)
    s.update(idx, values)
    m.update(idx, values)
    s2, m2 = SumSegmentTree(64), MinSegmentTree(64)
    s2.load_state_dict(s.state_dict())
    m2.load_state_dict(m.state_dict())
    r = rng.random(50) * s.sum()
    np.testing.assert_array_equal(s.find_prefixsum_idx(r), s2.find_prefixsum_idx(r))
    assert m2.min() == m.min() and s2.sum() == s.sum()
    with pytest.raises(ValueError, match="capacity 64"):
        SumSegmentTree(32).load_state_dict(s.state_dict())


def test_bad_input_errors():
    with pytest.raises(ValueError, match="power of two"):
        SumSegmentTree(100)
    with pytest.raises(ValueError, match="power of two"):
        MinSegmentTree(0)
    tree = SumSegmentTree(8)
    with pytest.raises(IndexError, match="out of range"):
        tree.update([8], [1.0])
    with pytest.raises(IndexError, match="out of range"):
        MinSegmentTree(8).update([-1], [1.0])
    with pytest.raises(ValueError, match="holds no mass"):
        tree.find_prefixsum_idx([0.5])
    with pytest.raises(IndexError, match="outside"):
        tree.sum(3, 9)
    assert tree.find_prefixsum_idx([]).size == 0


def test_trees_pickle_and_copy_in_either_form(tree_form):
    import copy
    import pickle

    rng = np.random.default_rng(4)
    s, m = SumSegmentTree(64), MinSegmentTree(64)
    idx, values = np.arange(40), rng.random(40)
    s.update(idx, values)
    m.update(idx, values)
    for clone in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert clone.native == s.native and clone.sum() == s.sum()
        r = rng.random(16) * s.sum()
        np.testing.assert_array_equal(clone.find_prefixsum_idx(r), s.find_prefixsum_idx(r))
    for clone in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert clone.native == m.native and clone.min() == m.min()


def test_di_engine_tree_api() -> None:
    """DI-engine's form of the trees: item assignment, reduce over non-empty ranges, the checked prefix search and
    the ``ding.utils`` import path."""
    from ding.utils import MinSegmentTree as UtilsMin
    from ding.utils import SumSegmentTree as UtilsSum

    assert UtilsSum is SumSegmentTree and UtilsMin is MinSegmentTree
    with pytest.raises(AssertionError, match="power of two"):
        SumSegmentTree(capacity=12)
    tree = SumSegmentTree(8)
    assert (tree.operation, tree.neutral_element, max(tree.value)) == ("sum", 0.0, 0.0)
    for i, v in enumerate([0.0, 0.1, 0.5, 0.0, 0.0, 0.2, 0.8, 0.0]):
        tree[i] = v
    assert tree[2] == 0.5
    assert tree.reduce() == pytest.approx(1.6) and tree.reduce(1, 3) == pytest.approx(0.6)
    with pytest.raises(AssertionError, match="non-empty"):
        tree.reduce(2, 2)
    assert tree.find_prefixsum_idx(0.6, trust_caller=False).tolist() == [5]
    with pytest.raises(AssertionError, match="outside"):
        tree.find_prefixsum_idx(tree.reduce() + 1e-3, trust_caller=False)
    with pytest.raises(ValueError, match="outside"):
        tree.find_prefixsum_idx(-1e-6, trust_caller=False)
    low = MinSegmentTree(4)
    assert (low.operation, low.neutral_element, min(low.value)) == ("min", math.inf, math.inf)
    for i, v in enumerate([1.0, -10.0, 10.0, 7.0]):
        low[i] = v
    assert low.reduce() == -10.0 and low.reduce(2, 4) == 7.0 and low[3] == 7.0
    with pytest.raises(AssertionError, match="non-empty"):
        low.reduce(3, 1)
