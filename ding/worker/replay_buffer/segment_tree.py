"""Vectorised segment trees for prioritized replay: a sum tree (sampling) and a min tree (IS normalisation).

Both trees take whole index batches: one call updates a batch of leaves and one call finds a batch of prefix sums.
The cost of a batch is a fixed number of numpy calls, not a Python loop per item:

* ``SumSegmentTree`` is a binary tree in heap layout (root at 1, children of ``i`` at ``2i`` and ``2i+1``). A batched
  prefix-sum search walks all queries down together, one level per step. A batched update writes the leaves and adds
  each leaf's change to all its ancestors in one ``np.add.at`` call. Adding deltas accumulates rounding error in the
  inner nodes, so the tree is rebuilt exactly from its leaves after every ``capacity`` leaf writes (an O(N) pass
  every N writes: constant work per write, amortised).
* ``MinSegmentTree`` keeps the DI-engine name, but only its overall minimum is ever read on the hot path, so it holds
  the leaves, their minimum and the number of leaves at the minimum: an update costs a few numpy calls, and one pass
  over the leaves finds the minimum again only when all of its holders were raised or emptied.

Where the package was installed with its C extension (``_segtree.c``, built by ``pip install`` with the system's C
compiler), the hot paths (a batch update of either tree, a batch search) run as compiled loops on the same arrays
instead, without numpy's cost per call (docs/benchmarks.md, Replay buffers, has the figures). The sum tree then
recomputes each changed leaf's ancestors exactly instead of adding deltas, so it never needs a rebuild. Both forms
give the same leaves, minimum and search results (the tests run both); ``DING_NATIVE_TREES=0`` in the environment
selects the numpy forms, and ``native=False`` does for one tree.
"""
from __future__ import annotations

import logging
import math
import os
from types import ModuleType
from typing import Any

import numpy as np


def _load_native() -> ModuleType | None:
    try:
        from . import _segtree
    except ImportError:  # built without a C compiler, or run from a source tree that was never installed
        return None
    return _segtree


_NATIVE_MODULE = _load_native()


def native_available() -> bool:
    """Whether the compiled segment-tree loops were built (the trees use them unless told not to)."""
    return _NATIVE_MODULE is not None


def native_default() -> bool:
    """Whether a tree built without ``native=`` uses the compiled loops: available and not switched off by
    ``DING_NATIVE_TREES=0``."""
    return _NATIVE_MODULE is not None and os.environ.get("DING_NATIVE_TREES", "1").strip() not in ("0", "false", "no")


_missing_noted = False


def note_if_not_native() -> None:
    """Log once per process that the prioritized buffer runs its trees in numpy because the extension is missing."""
    global _missing_noted
    if _missing_noted or _NATIVE_MODULE is not None:
        return
    _missing_noted = True
    logging.getLogger(__name__).warning(
        "prioritized replay: ding's compiled segment tree (ding/worker/replay_buffer/_segtree.c) is not built, so "
        "its numpy form is used (same results, more CPU per sample + update). It is built by `pip install "
        "-e .` where a C compiler is present (Debian/Ubuntu: apt install gcc python3-dev), then reinstall")


def _pick_native(native: bool | None) -> ModuleType | None:
    if native is None:
        return _NATIVE_MODULE if native_default() else None
    if native and _NATIVE_MODULE is None:
        raise RuntimeError("segment tree: native=True, but the compiled extension ding.worker.replay_buffer._segtree "
                           "is not built; reinstall ding (`pip install -e .`) on a machine with a C compiler")
    return _NATIVE_MODULE if native else None

_TILED_LEAVES = 256  # an update of up to this many leaves shifts one flat array for their ancestors
# the sum-tree search starts at the level of 2^10 nodes: one cumsum + searchsorted over them replaces the 10 levels
# above, and larger entry levels make that cumsum cost more than the levels it saves
_ENTRY_LEVEL = 10


class SegmentTreeArgumentError(ValueError, AssertionError):
    """A bad capacity or range given to a segment tree: a ``ValueError`` for ding's callers, and an
    ``AssertionError`` for code written against DI-engine's trees, which ``assert`` these conditions."""


def _check_capacity(capacity: int) -> int:
    if not isinstance(capacity, (int, np.integer)) or capacity < 1 or capacity & (capacity - 1):
        raise SegmentTreeArgumentError(f"segment tree capacity must be a positive power of two, got {capacity!r}")
    return int(capacity)


def _check_reduce_range(start: int, end: int | None, capacity: int) -> int:
    """DI-engine's ``reduce(start, end)`` range: ``end`` defaults to ``capacity`` and must lie past ``start``."""
    end = capacity if end is None else end
    if not 0 <= start < end <= capacity:
        raise SegmentTreeArgumentError(f"segment tree reduce range [{start}, {end}) must be non-empty and inside "
                                       f"[0, {capacity}]")
    return end


def _unique_last(idx: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated indices, keeping the value written last (the behaviour of a sequential loop)."""
    if idx.size < 2:
        return idx, values
    uniq, first_in_reversed = np.unique(idx[::-1], return_index=True)
    if uniq.size == idx.size:
        return idx, values
    return uniq, values[::-1][first_in_reversed]


def _as_batch(idx: Any, values: Any, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.ascontiguousarray(idx, dtype=np.int64).reshape(-1)
    values = np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=np.float64).reshape(-1), idx.shape))
    if idx.size and (idx.min() < 0 or idx.max() >= capacity):
        raise IndexError(f"segment tree index out of range [0, {capacity}): {idx[(idx < 0) | (idx >= capacity)][:5]}")
    return _unique_last(idx, values)


class SumSegmentTree:
    """Sum over ``capacity`` non-negative leaves with batched update and batched prefix-sum search.

    DI-engine's tree API is kept beside the batched one: ``tree[i] = v``, :meth:`reduce`, ``operation``,
    ``neutral_element`` and ``value`` (the leaves).
    """

    operation = "sum"
    neutral_element = 0.0

    def __init__(self, capacity: int, native: bool | None = None) -> None:
        self.capacity = _check_capacity(capacity)
        compiled = _pick_native(native)
        # the compiled functions themselves (they pickle by name; a module would make the tree unpicklable)
        self._native_set = compiled.sum_set if compiled is not None else None
        self._native_find = compiled.sum_find if compiled is not None else None
        self._depth = self.capacity.bit_length() - 1
        self._tree = np.zeros(2 * self.capacity, dtype=np.float64)
        self._leaves = self._tree[self.capacity:]  # a view; the tree array is never reallocated
        entry_level = min(self._depth, _ENTRY_LEVEL)
        self._entry = (1 << entry_level, self._tree[1 << entry_level:2 << entry_level])  # (first node, its level)
        self._walk = self._depth - entry_level  # levels walked one by one below the entry level
        self._shifts = np.arange(1, self._depth + 1, dtype=np.int64)[None, :]
        self._tiled_shifts = np.tile(self._shifts[0], _TILED_LEAVES)  # 1..depth, repeated for _TILED_LEAVES leaves
        self._writes_since_rebuild = 0

    @property
    def native(self) -> bool:
        """Whether this tree runs the compiled loops (else the numpy forms)."""
        return self._native_set is not None

    @property
    def values(self) -> np.ndarray:
        """Read-only view of the leaves."""
        view = self._leaves.view()
        view.flags.writeable = False
        return view

    value = values  # DI-engine's name

    def __getitem__(self, idx: Any) -> Any:
        return self._leaves[idx]

    def __setitem__(self, idx: Any, values: Any) -> None:
        self.update(idx, values)

    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """DI-engine's form of :meth:`sum`: the sum of leaves ``[start, end)``, a non-empty range."""
        return self.sum(start, _check_reduce_range(start, end, self.capacity))

    def update(self, idx: Any, values: Any) -> None:
        """Set leaves ``idx`` to ``values`` (a repeated index keeps its last value)."""
        self.update_unique(*_as_batch(idx, values, self.capacity))

    def update_unique(self, idx: np.ndarray, values: np.ndarray) -> None:
        """Fast path of :meth:`update`: ``idx`` is an int64 array of distinct in-range indices (not checked)."""
        if idx.size == 0:
            return
        if self._native_set is not None:  # exact: each ancestor recomputed from its children, so no rebuild is due
            self._native_set(self._tree, idx, values)
            return
        leaf = idx + self.capacity
        delta = values - self._tree[leaf]
        self._tree[leaf] = values
        # leaf j's ancestors, parent first, at [j * depth, (j + 1) * depth): flat index and value arrays, as np.add.at
        # with a broadcast value array is slow, and wrong in numpy 2.4.6 when the index array is 2-D
        n_ancestors = idx.size * self._depth
        if n_ancestors <= self._tiled_shifts.size:  # a batch: one flat shift of a prepared array, no broadcast
            ancestors = leaf.repeat(self._depth) >> self._tiled_shifts[:n_ancestors]
        else:
            ancestors = (leaf[:, None] >> self._shifts).ravel()
        np.add.at(self._tree, ancestors, delta.repeat(self._depth))
        self._writes_since_rebuild += idx.size
        if self._writes_since_rebuild >= self.capacity:
            self.rebuild()

    def rebuild(self) -> None:
        """Recompute every inner node exactly from the leaves."""
        size = self.capacity
        while size > 1:
            half = size // 2
            self._tree[half:size] = self._tree[size:2 * size].reshape(-1, 2).sum(axis=1)
            size = half
        self._writes_since_rebuild = 0

    def sum(self, start: int = 0, end: int | None = None) -> float:
        """Sum of leaves ``[start, end)``."""
        if start == 0 and end is None:
            return float(self._tree[1])
        end = self.capacity if end is None else end
        if not 0 <= start <= end <= self.capacity:
            raise IndexError(f"sum range [{start}, {end}) is outside [0, {self.capacity}]")
        bounds = self.prefix_sum(np.array([start, end], dtype=np.int64))
        return float(max(bounds[1] - bounds[0], 0.0))

    def prefix_sum(self, idx: Any) -> np.ndarray:
        """Sum of leaves ``[0, i)`` for every ``i`` in ``idx`` (``0 <= i <= capacity``)."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        out = np.zeros(idx.shape, dtype=np.float64)
        full = idx >= self.capacity
        out[full] = self._tree[1]
        node = idx[~full] + self.capacity
        acc = np.zeros(node.shape, dtype=np.float64)
        for _ in range(self._depth):
            is_right = (node & 1).astype(bool)
            acc += np.where(is_right, self._tree[node - 1], 0.0)
            node >>= 1
        out[~full] = acc
        return out

    def find_prefixsum_idx(self, prefixsum: Any, trust_caller: bool = True) -> np.ndarray:
        """For each ``r``, the leaf ``i`` with ``sum[0, i) <= r < sum[0, i+1)``, skipping zero leaves.

        ``r`` should lie in ``[0, sum())``; values at or beyond the total map to the last non-zero leaf.
        ``trust_caller=False`` (DI-engine's flag) checks first that every ``r`` lies in ``[0, sum()]``.
        """
        target = np.ascontiguousarray(prefixsum, dtype=np.float64).reshape(-1)
        if not trust_caller and target.size and (target.min() < 0 or target.max() > self._tree[1]):
            raise SegmentTreeArgumentError(f"prefix sums {target[(target < 0) | (target > self._tree[1])][:5]} lie "
                                           f"outside [0, {float(self._tree[1])}], this tree's total")
        return self.find(target)

    def find(self, target: np.ndarray) -> np.ndarray:
        """:meth:`find_prefixsum_idx` for a 1-D float64 array (not checked; read only: the walk works on a copy)."""
        if target.size == 0:
            return np.zeros(0, dtype=np.int64)
        if not self._tree[1] > 0:
            raise ValueError("find_prefixsum_idx: the tree holds no mass (every leaf is 0)")
        if self._native_find is not None:
            out = np.empty(target.size, dtype=np.int64)
            self._native_find(self._tree, target, out)
            return out
        # Enter the tree at a level of up to 1024 nodes through one cumsum + searchsorted (the same answer as walking
        # the top levels one by one, in 5 numpy calls instead of 50), then walk the remaining levels together.
        first, nodes = self._entry
        tree = self._tree
        cumulative = nodes.cumsum()
        pos = cumulative.searchsorted(target, "right")  # (the method, not np.searchsorted: no wrapper's dispatch)
        np.minimum(pos, first - 1, out=pos)
        cumulative -= nodes  # now the mass before each entry node
        r = target - cumulative[pos]
        node = pos + first
        # Per level, 6 numpy calls on the batch, each in its cheapest form: an array added to itself instead of a
        # shift by a Python scalar, and r - left * go_right (exactly r where go_right is False) instead of a masked
        # subtract (ufunc `where=` takes a slower loop).
        for _ in range(self._walk):
            node += node  # left child
            left = tree[node]
            go_right = r >= left
            left *= go_right
            r -= left
            node += go_right
        idx = node - self.capacity
        # Rounding can walk a query into a zero leaf (a hole) right after a subtree's end. Rare; redo those exactly.
        leaf = tree[node]
        if not np.minimum.reduce(leaf) > 0:
            bad = leaf <= 0
            idx[bad] = self._exact_find(target[bad])
        return idx

    def _exact_find(self, targets: np.ndarray) -> np.ndarray:
        positive = np.flatnonzero(self._leaves > 0)
        cumulative = np.cumsum(self._leaves[positive])
        k = np.searchsorted(cumulative, targets, side="right")
        return positive[np.minimum(k, positive.size - 1)]

    def state_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "tree": self._tree.copy(),
                "writes_since_rebuild": self._writes_since_rebuild}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if int(state["capacity"]) != self.capacity:
            raise ValueError(f"sum tree state has capacity {state['capacity']}, this tree has {self.capacity}")
        self._tree[:] = state["tree"]
        self._writes_since_rebuild = int(state["writes_since_rebuild"])
        if self.native:  # inner nodes exactly the sums of their children, as compiled updates keep them
            self.rebuild()


class MinSegmentTree:
    """Minimum over ``capacity`` leaves (empty leaves hold ``+inf``) with batched update.

    Only the minimum of all leaves is read on the hot path, so no tree is kept: the leaves, their minimum and how many
    leaves hold it. An update lowers the minimum or adds to its holders in a few numpy calls; only when every holder
    of the minimum is raised is it found again by one pass over the leaves (rare in prioritized replay: the item of
    the lowest priority is the least likely to be sampled). Ranges other than the whole are read from the leaves.
    DI-engine's tree API is kept too: ``tree[i] = v``, :meth:`reduce`, ``operation``, ``neutral_element``, ``value``.
    """

    operation = "min"
    neutral_element = math.inf

    def __init__(self, capacity: int, native: bool | None = None) -> None:
        self.capacity = _check_capacity(capacity)
        compiled = _pick_native(native)
        self._native_set = compiled.min_set if compiled is not None else None
        self._leaves = np.full(self.capacity, np.inf)
        self._min = math.inf
        self._holders = self.capacity  # leaves equal to the minimum

    @property
    def native(self) -> bool:
        """Whether this tracker runs the compiled update (else the numpy form)."""
        return self._native_set is not None

    @property
    def values(self) -> np.ndarray:
        view = self._leaves.view()
        view.flags.writeable = False
        return view

    value = values  # DI-engine's name

    def __getitem__(self, idx: Any) -> Any:
        return self._leaves[idx]

    def __setitem__(self, idx: Any, values: Any) -> None:
        self.update(idx, values)

    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """DI-engine's form of :meth:`min`: the minimum of leaves ``[start, end)``, a non-empty range."""
        return self.min(start, _check_reduce_range(start, end, self.capacity))

    def update(self, idx: Any, values: Any) -> None:
        """Set leaves ``idx`` to ``values`` (a repeated index keeps its last value)."""
        self.update_unique(*_as_batch(idx, values, self.capacity))

    def update_unique(self, idx: np.ndarray, values: np.ndarray) -> None:
        """Fast path of :meth:`update`: ``idx`` is an int64 array of distinct in-range indices (not checked)."""
        if idx.size == 0:
            return
        if self._native_set is not None:
            self._min, self._holders = self._native_set(self._leaves, idx, values, self._min, self._holders)
            return
        leaves = self._leaves
        old = leaves[idx]
        leaves[idx] = values
        lowest = float(np.minimum.reduce(values))  # the ufunc reduction skips ndarray.min's Python wrapper
        if lowest < self._min:
            self._min, self._holders = lowest, int(np.count_nonzero(values == lowest))
            return
        self._holders -= int(np.count_nonzero(old == self._min))  # no old leaf is below the minimum
        if lowest == self._min:
            self._holders += int(np.count_nonzero(values == lowest))
        if self._holders <= 0:
            self.rebuild()

    def min(self, start: int = 0, end: int | None = None) -> float:
        """Minimum of leaves ``[start, end)`` (``inf`` if they are all empty)."""
        if start == 0 and end is None:
            return self._min
        end = self.capacity if end is None else end
        if not 0 <= start <= end <= self.capacity:
            raise IndexError(f"min range [{start}, {end}) is outside [0, {self.capacity}]")
        return float(self._leaves[start:end].min()) if end > start else math.inf

    def rebuild(self) -> None:
        """Find the minimum and its holders again by one pass over the leaves."""
        self._min = float(self._leaves.min())
        self._holders = int(np.count_nonzero(self._leaves == self._min))

    def state_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "leaves": self._leaves.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if int(state["capacity"]) != self.capacity:
            raise ValueError(f"min tree state has capacity {state['capacity']}, this tree has {self.capacity}")
        self._leaves[:] = state["leaves"]
        self.rebuild()
