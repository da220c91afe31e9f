"""``AdvancedReplayBuffer``: proportional prioritized replay with use-count and staleness limits."""
from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from operator import itemgetter
from typing import Any

import numpy as np

from ding.config.ranges import at_least, between, greater_than
from ding.utils import BUFFER_REGISTRY, ConfigError, ReplayBufferError

from .base_buffer import check_sample_size
from .buffer_io import read_buffer_file, write_buffer_file
from .frame_sharing import copy_out, materialize
from .monitor import PeriodicThruputMonitor, SampledDataMonitor, ThruputController
from .naive_buffer import NaiveReplayBuffer
from .segment_tree import MinSegmentTree, SumSegmentTree, note_if_not_native

MIN_PRIORITY = 1e-6  # priorities below this (including 0) are sampled as if they were this: items stay reachable
_UPDATE_KEYS = ("priority", "replay_unique_id", "replay_buffer_idx")
# What the buffer keeps per slot, as one 32-byte row of int64 (a batch's metadata then sits in 64 cache lines, not
# 4 x 64): the item's number in push order (-1: the slot is empty), times sampled, the learner iteration when it was
# collected, and the raw priority (a float64 stored by its bits). A plain int64 matrix rather than a numpy record
# array: ``take`` gathers a batch's rows of it in one copy, where indexing a record array goes field by field.
_UID, _USE, _COLLECT_ITER, _PRIORITY = range(4)
_FLOAT64 = np.dtype(np.float64)


@BUFFER_REGISTRY.register("advanced")
class AdvancedReplayBuffer(NaiveReplayBuffer):
    """Prioritized replay (Schaul et al. 2016, proportional variant) on a sum tree and a min tree.

    Item ``i`` is drawn with probability ``P(i) = p_i^alpha / sum_j p_j^alpha`` by stratified sampling (one draw per
    equal slice of the total), and carries the importance weight ``IS = (N P(i))^-beta / max_j (N P(j))^-beta`` (the
    max over every stored item), with ``beta`` annealed linearly to 1. New items get the largest priority seen so far
    unless they carry a ``priority`` key. Items must be mappings (stored as dicts); a sampled item is a shallow copy
    plus the keys ``replay_unique_id, replay_buffer_idx, IS, use, staleness, priority``.
    """

    config = dict(
        type="advanced",  # registry name
        replay_buffer_size=10000,  # how many transitions the buffer holds; the oldest are overwritten first
        replay_buffer_start_size=0,  # sample() returns None until at least this many items are stored
        max_use=float("inf"),  # an item sampled this many times is removed after that sample
        max_staleness=float("inf"),  # items collected more than this many learner iterations ago are not sampled
        alpha=0.6,  # priority exponent: 0 samples uniformly, 1 fully proportionally
        beta=0.4,  # importance-sampling exponent at the start, annealed linearly to 1
        anneal_step=int(1e5),  # sample() calls over which beta reaches 1 (0: beta stays constant)
        priority=True,  # False: uniform sampling, IS = 1, priority updates ignored (max_use/staleness still apply)
        priority_IS_weight=True,  # False: every sampled item gets IS = 1 (no importance correction)
        enable_track_used_data=False,  # pass every evicted item to the callback of set_used_data_callback()
        deepcopy=False,  # sample() returns deep copies (default: shallow copies of the stored dicts)
        # sampled items get the stacks back as arrays, as pushed
        share_frames=True,  # keep each frame of uint8 (k, H, W) frame stacks (Atari obs) once, not k times
        seed=None,  # seed of the buffer's own RNG; None draws one from numpy's global RNG at construction
        thruput_controller=dict(
            push_sample_rate_limit=dict(
                max=float("inf"),  # pushes are dropped while pushed/sampled items in the window exceed this
                min=0,  # sample() returns None while pushed/sampled items in the window are below this
            ),
            window_seconds=30,  # window over which the push/sample ratio is measured
            sample_min_limit_ratio=1,  # sample(size) needs at least size * this many stored items
        ),
        monitor=dict(
            sampled_data_attr=dict(
                average_range=5,  # average the sampled items' use/priority/staleness over this many sample() calls
                print_freq=200,  # write those averages every this many sample() calls
            ),
            periodic_thruput=dict(
                seconds=60,  # write pushed/sampled/removed items per second this often
            ),
        ),
    )
    config_ranges = {
        "max_use": at_least(1),
        "max_staleness": at_least(0),
        "alpha": at_least(0),
        "beta": between(0, 1),
        "anneal_step": at_least(0),
        "thruput_controller.push_sample_rate_limit.max": greater_than(0),
        "thruput_controller.push_sample_rate_limit.min": at_least(0),
        "thruput_controller.window_seconds": greater_than(0),
        "thruput_controller.sample_min_limit_ratio": greater_than(0),
        "monitor.sampled_data_attr.average_range": at_least(1, integer=True),
        "monitor.sampled_data_attr.print_freq": at_least(1, integer=True),
        "monitor.periodic_thruput.seconds": greater_than(0),
    }

    def __init__(
        self,
        cfg: Mapping[str, Any] | None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "buffer",
    ) -> None:
        super().__init__(cfg, tb_logger, exp_name, instance_name)
        conf = self._cfg
        capacity = self._storage.capacity
        tree_capacity = 1 << (capacity - 1).bit_length()
        self._sum_tree = SumSegmentTree(tree_capacity)
        self._min_tree = MinSegmentTree(tree_capacity)
        self._meta = np.zeros((capacity, 4), dtype=np.int64)  # one row per slot, see _UID.._PRIORITY
        # column views (the matrix is never reallocated, so they stay valid)
        self._uid, self._use, self._collect_iter = (self._meta[:, c] for c in (_UID, _USE, _COLLECT_ITER))
        self._priority = self._meta.view(np.float64)[:, _PRIORITY]
        self._uid[:] = -1
        # The last sample's (slot list, unique-id list, slot array, unique-id array, self._writes at the draw, whether
        # its slots strictly increase): update() with the lists a learner copies from that batch skips converting and
        # range-checking them again, and, when no slot was written or emptied since, checking that they still hold
        # the sampled items and looking for repeated slots.
        self._last_draw: tuple[list, list, np.ndarray, np.ndarray, int, bool] | None = None
        self._writes = 0  # counts the pushes, removals and clears that change which item a slot holds
        self._dict_subclasses = False  # a stored item is an EasyDict or another dict subclass: copy it by its type
        self._last_seen = np.zeros(capacity, dtype=np.int64)  # scratch for de-duplicating update() entries
        self._positions = np.arange(64)  # 0, 1, 2, ...: strata of a sample, entries of an update (grown on demand)
        self._use_priority = bool(conf.priority)
        if self._use_priority:
            note_if_not_native()
        self._use_is_weight = self._use_priority and bool(conf.priority_IS_weight)
        self._min_limit_ratio = float(conf.thruput_controller.sample_min_limit_ratio)
        self._alpha = float(conf.alpha)
        self._max_use = float(conf.max_use)
        self._max_staleness = float(conf.max_staleness)
        self._anneal_step = float(conf.anneal_step)
        self._max_priority = 1.0
        self._beta_start = float(conf.beta)
        self._anneal_origin = 0
        self._sample_calls = 0
        self._last_learner_iter = 0
        self._thruput = ThruputController(conf.thruput_controller)
        self._data_monitor = SampledDataMonitor(conf.monitor.sampled_data_attr, instance_name, tb_logger, self._logger)
        self._rate_monitor = PeriodicThruputMonitor(conf.monitor.periodic_thruput, instance_name, tb_logger,
                                                    self._logger)

    def _check_config(self) -> None:
        super()._check_config()
        cfg, name = self._cfg, type(self).__name__
        checks = [
            ("alpha", cfg.alpha, 0 <= _num(cfg.alpha) < math.inf, "a number >= 0"),
            ("beta", cfg.beta, 0 <= _num(cfg.beta) <= 1, "a number in [0, 1]"),
            ("anneal_step", cfg.anneal_step, _num(cfg.anneal_step) >= 0, "a number >= 0 (0: no annealing)"),
            ("max_use", cfg.max_use, _num(cfg.max_use) >= 1, "a number >= 1 (inf: no limit)"),
            ("max_staleness", cfg.max_staleness, _num(cfg.max_staleness) >= 0, "a number >= 0 (inf: no limit)"),
            ("thruput_controller.sample_min_limit_ratio", cfg.thruput_controller.sample_min_limit_ratio,
             _num(cfg.thruput_controller.sample_min_limit_ratio) > 0, "a number > 0"),
            ("thruput_controller.window_seconds", cfg.thruput_controller.window_seconds,
             _num(cfg.thruput_controller.window_seconds) > 0, "a number of seconds > 0"),
            ("thruput_controller.push_sample_rate_limit.max", cfg.thruput_controller.push_sample_rate_limit.max,
             _num(cfg.thruput_controller.push_sample_rate_limit.max) > 0, "a number > 0 (inf: no limit)"),
            ("thruput_controller.push_sample_rate_limit.min", cfg.thruput_controller.push_sample_rate_limit.min,
             0 <= _num(cfg.thruput_controller.push_sample_rate_limit.min) < math.inf, "a number >= 0 (0: no limit)"),
        ]
        for key, value, ok, expected in checks:
            if not ok:
                raise ConfigError(f"{name}: {key} must be {expected}, got {value!r}")

    # ------------------------------------------------------------------ properties
    @property
    def beta(self) -> float:
        """The importance-sampling exponent the next ``sample`` uses."""
        if not 0 < self._anneal_step < math.inf:
            return self._beta_start
        progress = min(1.0, (self._sample_calls - self._anneal_origin) / self._anneal_step)
        return self._beta_start + (1.0 - self._beta_start) * progress

    @beta.setter
    def beta(self, value: float) -> None:
        """Restart the annealing from ``value``: it reaches 1 after another ``anneal_step`` samples."""
        if not 0 <= value <= 1:
            raise ValueError(f"beta must be in [0, 1], got {value!r}")
        with self._lock:
            self._beta_start = float(value)
            self._anneal_origin = self._sample_calls

    # ------------------------------------------------------------------ data in
    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        """Store one dict or a list of dicts with the current max priority (or their own ``priority`` key)."""
        items = data if isinstance(data, list) else [data]
        other_mappings = False
        for i, item in enumerate(items):
            if type(item) is not dict:
                if not isinstance(item, Mapping):
                    where = f"item {i} of the pushed list" if isinstance(data, list) else "the pushed item"
                    raise ReplayBufferError(f"buffer '{self._instance_name}' (advanced): {where} is a "
                                            f"{type(item).__name__}; push dicts (transitions) or a list of dicts")
                if isinstance(item, dict):
                    self._dict_subclasses = True
                else:
                    other_mappings = True
        if other_mappings:  # stored as plain dicts, so sample() can copy them cheaply
            items = [item if isinstance(item, dict) else dict(item) for item in items]
        given = [item.get("priority") for item in items]
        self._push(items, None if all(p is None for p in given) else given)

    def _push(self, items: list, given: list | None) -> None:
        n = len(items)
        if n == 0:
            return
        priorities: np.ndarray | None = None
        if given is not None:
            missing = np.array([p is None for p in given])
            priorities = np.array([0.0 if p is None else _scalar(p, self._instance_name) for p in given])
            _check_priorities(self._instance_name, "push", priorities[~missing])
        collect_iter = [item.get("collect_iter") for item in items]
        with self._lock:
            self._check_open("push")
            blocked = self._thruput.push_blocked()
            if blocked is not None:
                self._rate_monitor.add("rejected_push", n)
                self._throttled("push", f"buffer '{self._instance_name}': {blocked}")
                return
            if self._sharer is not None:
                items = self._sharer.pack(items)
            slots, first, evicted = self._storage.write(items, self._track_used)
            k = slots.size  # < n when more items than slots were pushed: the newest ones are kept
            if priorities is None:
                new_priority = np.full(k, self._max_priority)
            else:
                new_priority = np.where(missing[n - k:], self._max_priority, priorities[n - k:])
                self._max_priority = max(self._max_priority, float(new_priority.max()))
            self._uid[slots] = np.arange(first, first + k, dtype=np.int64)
            self._writes += 1
            self._use[slots] = 0
            self._collect_iter[slots] = [self._last_learner_iter if c is None else c for c in collect_iter[n - k:]]
            self._set_priority(slots, new_priority)
            self._thruput.record(pushed=n)
            self._rate_monitor.add("pushed", n)
            self._rate_monitor.tick(self._storage.valid_count)
        self._report_used(evicted)

    def _set_priority(self, slots: np.ndarray, priority: np.ndarray) -> None:
        """Distinct ``slots`` get ``priority`` (raw) and the matching tree leaves."""
        self._priority[slots] = priority
        leaf = np.maximum(priority, MIN_PRIORITY) ** self._alpha if self._use_priority else np.ones(slots.size)
        self._sum_tree.update_unique(slots, leaf)
        self._min_tree.update_unique(slots, leaf)

    def _remove(self, slots: np.ndarray) -> list:
        """Empty distinct valid ``slots`` (trees included); returns the removed items."""
        self._sum_tree.update_unique(slots, np.zeros(slots.size))
        self._min_tree.update_unique(slots, np.full(slots.size, np.inf))
        self._uid[slots] = -1
        self._writes += 1
        self._rate_monitor.add("removed", slots.size)
        return self._storage.remove(slots)

    def update(self, info: Mapping[str, Any] | None) -> None:
        """Set new priorities: ``{'priority', 'replay_unique_id', 'replay_buffer_idx'}``, lists of equal length.

        A slot whose item was overwritten or removed since it was sampled (its unique id differs) is skipped.
        ``None`` or ``{}`` (a policy without priorities) does nothing, and so does any update after ``close()``
        (a learner thread may still send one while the pipeline shuts down).
        """
        if not info:
            return
        if type(info) is not dict and not isinstance(info, Mapping):  # (the type test skips the ABC's slower one)
            raise ReplayBufferError(f"buffer '{self._instance_name}': update() takes a dict with keys "
                                    f"{list(_UPDATE_KEYS)}, got {type(info).__name__}")
        if not ("priority" in info and "replay_unique_id" in info and "replay_buffer_idx" in info):
            present = [k for k in _UPDATE_KEYS if k in info]
            if not present:
                return
            missing = [k for k in _UPDATE_KEYS if k not in info]
            raise ReplayBufferError(f"buffer '{self._instance_name}': update() info lacks {missing}; it needs "
                                    f"{list(_UPDATE_KEYS)} (the sampled items carry the ids)")
        priority = info["priority"]
        if not (type(priority) is np.ndarray and priority.dtype is _FLOAT64 and priority.ndim == 1):
            priority = _to_numpy(priority, np.float64, "priority", self._instance_name)
        given_uid, given_slots = info["replay_unique_id"], info["replay_buffer_idx"]
        last = self._last_draw  # one read: a sample() in another thread may replace it
        drawn = (last is not None and type(given_slots) is list and type(given_uid) is list
                 and given_slots == last[0] and given_uid == last[1])  # the ids of the last batch, as drawn
        drawn_at, drawn_increasing = -1, False
        if drawn:
            assert last is not None
            slots, uid, drawn_at, drawn_increasing = last[2], last[3], last[4], last[5]  # in range: they were drawn
        else:
            uid = _to_numpy(given_uid, np.int64, "replay_unique_id", self._instance_name)
            slots = _to_numpy(given_slots, np.int64, "replay_buffer_idx", self._instance_name)
            self._check_slots(slots)
        if not priority.size == uid.size == slots.size:
            raise ReplayBufferError(f"buffer '{self._instance_name}': update() got {priority.size} priorities, "
                                    f"{uid.size} replay_unique_id and {slots.size} replay_buffer_idx; they must have "
                                    "the same length (one entry per sampled item)")
        highest = _check_priorities(self._instance_name, "update", priority)
        if slots.size == 0:
            return
        with self._lock:
            if self._closed or not self._use_priority:
                return
            untouched = drawn and drawn_at == self._writes  # no slot written or emptied since the draw
            if not untouched:
                current = self._uid[slots] == uid  # empty slots hold -1, which no sampled item carries
                if not np.logical_and.reduce(current):  # (the ufunc reductions skip ndarray.all's Python wrapper)
                    slots, priority = slots[current], priority[current]
                    if slots.size == 0:
                        return
                    highest = float(priority.max())
            self._max_priority = max(self._max_priority, highest)
            # One slot sampled twice: the later entry wins, as a loop over the entries would do. A batch drawn by
            # sample() comes in slot order, so strictly increasing slots (no repeats) are the common case.
            increasing = untouched and drawn_increasing
            if slots.size > 1 and not increasing and not np.logical_and.reduce(slots[1:] > slots[:-1]):
                if self._positions.size < slots.size:
                    self._positions = np.arange(slots.size)
                seen, position = self._last_seen, self._positions[:slots.size]
                seen[slots] = position  # with repeated slots, any one of their positions lands here...
                np.maximum.at(seen, slots, position)  # ...so take the largest explicitly
                last = seen[slots] == position
                slots, priority = slots[last], priority[last]
            self._set_priority(slots, priority)

    def _check_slots(self, slots: np.ndarray) -> None:
        capacity = self._storage.capacity
        if slots.size and np.maximum.reduce(slots.view(np.uint64)) >= capacity:  # negatives wrap to huge unsigned
            bad = slots[(slots < 0) | (slots >= capacity)][:5].tolist()
            raise ReplayBufferError(f"buffer '{self._instance_name}': replay_buffer_idx out of range [0, {capacity}): "
                                    f"{bad}")

    # ------------------------------------------------------------------ data out
    # no ``replace`` argument (NaiveReplayBuffer's): the stratified prioritized draw has no without-replacement mode
    def sample(  # type: ignore[override]
            self, size: int, cur_learner_iter: int = 0, sample_range: slice | None = None) -> list | None:
        """Draw ``size`` items by priority; None (with a logged reason) if the buffer cannot serve them yet.

        ``sample_range`` restricts the draw to items selected by age, oldest first (``slice(-1000, None)``: the
        newest 1000); probabilities are renormalised inside it, IS weights still use the whole buffer's minimum.
        """
        size = check_sample_size(type(self).__name__, size)
        evicted: list = []
        result: list | None
        with self._lock:
            self._check_open("sample")
            self._last_learner_iter = int(cur_learner_iter)
            if self._max_staleness < math.inf:
                evicted = self._drop_stale(cur_learner_iter)
            start, stop = self._storage.resolve_range(sample_range, type(self).__name__)
            reason = self._refusal(size, start, stop, sample_range is not None)
            if reason is not None:
                self._rate_monitor.add("refused_sample", 1)
                self._throttled("sample", reason)
                result = None
            elif size == 0:
                result = []
            else:
                result, used_up = self._draw(size, cur_learner_iter, start, stop)
                evicted += used_up
        self._report_used(evicted)
        if result and self._sharer is not None:
            materialize(result)
        if result and self._cfg.deepcopy:
            result = copy.deepcopy(result)
        return result

    def _drop_stale(self, cur_learner_iter: int) -> list:
        age = cur_learner_iter - self._collect_iter
        stale = np.flatnonzero(self._storage.valid & (age > self._max_staleness))
        return self._remove(stale) if stale.size else []

    def _refusal(self, size: int, start: int, stop: int, in_range: bool) -> str | None:
        count = self._storage.valid_count
        needed = max(1, math.ceil(size * self._min_limit_ratio))
        reason = self._start_size_refusal()
        if reason is None and count < needed:
            reason = (f"buffer '{self._instance_name}': asked for {size} items but {count} are stored (sampling needs "
                      f"{needed} = size * sample_min_limit_ratio); sample() returns None. Collect more data first or "
                      "lower the batch size")
        if reason is None and in_range and not self._storage.valid[self._range_slots(start, stop)].any():
            reason = (f"buffer '{self._instance_name}': sample_range selects positions [{start}, {stop}) which hold no "
                      "items; sample() returns None")
        if reason is None:
            blocked = self._thruput.sample_blocked()
            reason = None if blocked is None else f"buffer '{self._instance_name}': {blocked}"
        return reason

    def _range_slots(self, start: int, stop: int) -> np.ndarray:
        segments = self._storage.segments(start, stop)
        return np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in segments] or [np.zeros(0, np.int64)])

    def _draw(self, size: int, cur_learner_iter: int, start: int, stop: int) -> tuple[list, list]:
        # Stratified: one uniform draw in each of `size` equal slices of the mass. The batch comes in slice order, as
        # in DI-engine and Dopamine: the tree and the item memory are read front to back (kind to caches), and a
        # shuffle would be a cost of every sample+update cycle for learners that use the whole batch anyway.
        if self._positions.size < size:
            self._positions = np.arange(size)
        strata = self._rng.random(size)
        strata += self._positions[:size]  # stratum index + uniform offset, in [0, size)
        if (start, stop) == (0, self._storage.filled):
            strata *= self._sum_tree.sum() / size
            slots = self._sum_tree.find(strata)
        else:
            slots = self._find_in_range(strata / size, start, stop)
        increasing = size < 2 or bool(np.logical_and.reduce(slots[1:] > slots[:-1]))  # no slot drawn twice
        if increasing:
            self._use[slots] += 1
        else:
            np.add.at(self._use, slots, 1)
        rows = self._meta.take(slots, axis=0).T  # (4, size): uid, use, collect_iter, priority bits
        uid = rows[_UID]
        priority = rows[_PRIORITY].view(np.float64)
        beta = self.beta
        if self._use_is_weight:
            weight = self._sum_tree[slots]  # the leaves hold max(priority, MIN_PRIORITY) ** alpha
            weight /= self._min_tree.min()
            np.power(weight, -beta, out=weight)
        else:
            weight = np.ones(size)
        use = rows[_USE]
        staleness = cur_learner_iter - rows[_COLLECT_ITER]
        # Copy in C loops (itemgetter, map): the copies wait on memory (the stored dicts are spread over the heap),
        # and a tight loop lets the CPU overlap those waits; then add the meta keys to the fresh, cached copies.
        slot_list, uid_list = slots.tolist(), uid.tolist()
        stored = itemgetter(*slot_list)(self._storage.data) if size > 1 else (self._storage.data[slot_list[0]],)
        columns = (slot_list, uid_list, weight.tolist(), use.tolist(), staleness.tolist(), priority.tolist())
        if self._dict_subclasses:
            result = list(map(_copy_item, stored))
            for item, s, u, w, n, st, p in zip(result, *columns):
                item["replay_unique_id"] = u
                item["replay_buffer_idx"] = s
                item["IS"] = w
                item["use"] = n
                item["staleness"] = st
                item["priority"] = p
        else:  # dict(d, **keys) sizes the copy's table once for all its keys, where a copy grows it on the 6th store
            result = [dict(d, replay_unique_id=u, replay_buffer_idx=s, IS=w, use=n, staleness=st, priority=p)
                      for d, s, u, w, n, st, p in zip(stored, *columns)]
        self._sample_calls += 1
        # before the max_use removal below: update() must then look which slots still hold the sampled items
        self._last_draw = (slot_list, uid_list, slots, uid, self._writes, increasing)
        used_up: list = []
        if self._max_use < math.inf:
            done = np.unique(slots[use >= self._max_use])
            if done.size:
                used_up = self._remove(done)
        self._thruput.record(sampled=size)
        self._rate_monitor.add("sampled", size)
        if self._data_monitor.wants(self._sample_calls):
            self._data_monitor.observe(self._sample_calls, cur_learner_iter, use, priority, staleness, weight, beta)
        self._rate_monitor.tick(self._storage.valid_count)
        return result, used_up

    def _find_in_range(self, u: np.ndarray, start: int, stop: int) -> np.ndarray:
        segments = self._storage.segments(start, stop)
        bounds = self._sum_tree.prefix_sum(np.array(segments, dtype=np.int64).reshape(-1)).reshape(-1, 2)
        mass = np.maximum(bounds[:, 1] - bounds[:, 0], 0.0)
        r = u * mass.sum()
        if len(segments) == 2:
            target = np.where(r < mass[0], bounds[0, 0] + r, bounds[1, 0] + (r - mass[0]))
        else:
            target = bounds[0, 0] + r
        slots = self._sum_tree.find_prefixsum_idx(target)
        # Rounding at a segment border can step one slot outside the range; redo those few exactly.
        in_range = np.zeros(slots.size, dtype=bool)
        for lo, hi in segments:
            in_range |= (slots >= lo) & (slots < hi)
        if not in_range.all():
            candidates = self._range_slots(start, stop)
            candidates = candidates[self._sum_tree[candidates] > 0]
            cumulative = np.cumsum(self._sum_tree[candidates])
            k = np.searchsorted(cumulative, r[~in_range], side="right")
            slots[~in_range] = candidates[np.minimum(k, candidates.size - 1)]
        return slots

    # ------------------------------------------------------------------ lifecycle and persistence
    def _on_clear(self) -> None:
        self._sum_tree = SumSegmentTree(self._sum_tree.capacity)
        self._min_tree = MinSegmentTree(self._min_tree.capacity)
        self._uid[:] = -1
        self._use[:] = 0
        self._writes += 1

    def save_data(self, file_name: str) -> None:
        """Write the stored items, oldest first, with their priorities (see ``buffer_io`` for the format)."""
        with self._lock:
            slots = self._storage.valid_slots_in_order()
            items = [self._storage.data[s] for s in slots.tolist()]
            priority = self._priority[slots].tolist()
        if self._sharer is not None:  # the file holds plain arrays (a stack shared by two items is written once)
            items = copy_out(items)
        write_buffer_file(file_name, str(self._cfg.type), items, priority=priority)

    def load_data(self, file_name: str) -> None:
        """Push every item stored in ``file_name``, with its saved priority when the file has one."""
        payload = read_buffer_file(file_name)
        items = payload["items"]
        bad = next((i for i, item in enumerate(items) if not isinstance(item, Mapping)), None)
        if bad is not None:
            raise ReplayBufferError(f"buffer '{self._instance_name}' (advanced): item {bad} of '{file_name}' is a "
                                    f"{type(items[bad]).__name__}; the advanced buffer stores dicts only")
        priority = payload.get("priority")
        if priority is None or len(priority) != len(items):
            priority = [item.get("priority") for item in items]
        self._push(items, None if all(p is None for p in priority) else list(priority))

    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            state = super().state_dict()
            state.update(
                uid=self._uid.copy(), use=self._use.copy(), collect_iter=self._collect_iter.copy(),
                priority=self._priority.copy(), sum_tree=self._sum_tree.state_dict(),
                min_tree=self._min_tree.state_dict(), max_priority=self._max_priority, alpha=self._alpha,
                use_priority=self._use_priority, beta_start=self._beta_start, anneal_origin=self._anneal_origin,
                sample_calls=self._sample_calls, last_learner_iter=self._last_learner_iter,
            )
            return state

    def load_state_dict(self, _state_dict: Mapping[str, Any], deepcopy: bool = False) -> None:
        """Restore a :meth:`state_dict` (or push the items of ``{'data': [...]}``); ``deepcopy=True`` copies the
        items instead of sharing them."""
        if self._load_items_only(_state_dict, deepcopy):
            return
        with self._lock:
            super().load_state_dict(_state_dict)
            state = _state_dict
            if deepcopy:
                self._storage.data = copy.deepcopy(self._storage.data)
            self._dict_subclasses = any(type(item) is not dict for item in self._storage.data if item is not None)
            self._uid[:] = state["uid"]
            self._writes += 1
            self._use[:] = state["use"]
            self._collect_iter[:] = state["collect_iter"]
            self._priority[:] = state["priority"]
            if state["alpha"] == self._alpha and state["use_priority"] == self._use_priority:
                self._sum_tree.load_state_dict(state["sum_tree"])
                self._min_tree.load_state_dict(state["min_tree"])
            else:  # alpha or the priority switch changed: the leaves follow the new setting
                self._sum_tree = SumSegmentTree(self._sum_tree.capacity)
                self._min_tree = MinSegmentTree(self._min_tree.capacity)
                valid = np.flatnonzero(self._storage.valid)
                self._set_priority(valid, self._priority[valid])
            self._max_priority = float(state["max_priority"])
            self._beta_start = float(state["beta_start"])
            self._anneal_origin = int(state["anneal_origin"])
            self._sample_calls = int(state["sample_calls"])
            self._last_learner_iter = int(state["last_learner_iter"])


def _copy_item(item: dict) -> dict:
    return item.copy() if type(item) is dict else copy.copy(item)


def _num(value: Any) -> float:
    """``value`` as a float, or NaN (which fails every range check) if it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return math.nan
    return float(value)


def _to_numpy(value: Any, dtype: type, key: str, instance_name: str) -> np.ndarray:
    if type(value) is not list and hasattr(value, "detach"):  # a torch tensor, possibly on GPU or requiring grad
        value = value.detach().cpu().numpy()
    try:
        array: np.ndarray = np.ascontiguousarray(value, dtype=dtype)  # (the compiled trees read contiguous arrays)
        return array if array.ndim == 1 else array.reshape(-1)
    except (TypeError, ValueError) as e:
        raise ReplayBufferError(f"buffer '{instance_name}': update() {key} must be a list or array of numbers "
                                f"(as sampled from this buffer), got {value!r:.80}") from e


def _scalar(value: Any, instance_name: str) -> float:
    """A pushed item's ``priority`` as a float (a python number, a numpy scalar or a one-element array/tensor)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ReplayBufferError(f"buffer '{instance_name}': push() got priority {value!r:.60}; the 'priority' key of "
                                "a pushed item must be a number") from e
    if array.size != 1:
        raise ReplayBufferError(f"buffer '{instance_name}': push() got a priority with {array.size} values; the "
                                "'priority' key of a pushed item must be one number")
    return float(array.reshape(()))


def _check_priorities(instance_name: str, where: str, priority: np.ndarray) -> float:
    """Raise on a negative, NaN or infinite priority; return the largest (-inf if there are none)."""
    if priority.size == 0:
        return -math.inf
    highest = float(np.maximum.reduce(priority))  # the ufunc reductions skip ndarray.max's Python wrapper
    if np.minimum.reduce(priority) >= 0 and highest < math.inf:  # NaN fails both comparisons
        return highest
    first = int(np.flatnonzero(~np.isfinite(priority) | (priority < 0))[0])  # there is one: a check above failed
    raise ReplayBufferError(f"buffer '{instance_name}': {where}() got priority {float(priority[first])} at "
                            f"position {first}; priorities must be finite and >= 0 (e.g. abs(td_error) + 1e-6)")
