"""Property tests: random sequences of push / sample / update / clear checked against a plain-Python model."""
from __future__ import annotations

import math

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ding.worker.replay_buffer import AdvancedReplayBuffer, NaiveReplayBuffer

priorities = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)


class AdvancedBufferModel(RuleBasedStateMachine):
    """The model knows which item sits in which slot, its use count and priority; the buffer must agree."""

    @initialize(capacity=st.integers(1, 8), max_use=st.sampled_from([1, 2, 3, math.inf]),
                ratio=st.sampled_from([1.0, 0.25]), seed=st.integers(0, 2 ** 16))
    def setup(self, capacity, max_use, ratio, seed):
        self.cfg = dict(replay_buffer_size=capacity, max_use=max_use, alpha=0.7,
                        thruput_controller=dict(sample_min_limit_ratio=ratio))
        self.buffer = AdvancedReplayBuffer(dict(self.cfg, seed=seed))
        self.capacity, self.max_use, self.ratio = capacity, max_use, ratio
        self.slots: list[int | None] = [None] * capacity
        self.tail = 0
        self.alive: dict[int, dict] = {}  # item id -> {slot, use, priority}
        self.uid_of: dict[int, int] = {}
        self.max_priority = 1.0
        self.next_id = 0
        self.samples: list[list[tuple[int, int, int]]] = []  # (replay_unique_id, replay_buffer_idx, item id)

    @rule(given=st.lists(st.one_of(st.none(), priorities), min_size=1, max_size=10))
    def push(self, given):
        items = []
        for p in given:
            item = {"i": self.next_id}
            if p is not None:
                item["priority"] = p
            items.append(item)
            self.next_id += 1
        self.buffer.push(items, cur_collector_envstep=0)
        stored = items[-self.capacity:]
        fill = self.max_priority
        for item in stored:
            old = self.slots[self.tail]
            if old is not None:
                self.alive.pop(old, None)
            self.slots[self.tail] = item["i"]
            self.alive[item["i"]] = {"slot": self.tail, "use": 0, "priority": item.get("priority", fill)}
            self.tail = (self.tail + 1) % self.capacity
        self.max_priority = max([self.max_priority] + [self.alive[item["i"]]["priority"] for item in stored])

    def _check_batch(self, batch, size):
        needed = max(1, math.ceil(size * self.ratio))
        if len(self.alive) < needed:
            assert batch is None
            return
        assert batch is not None and len(batch) == size
        for item in batch:  # every sampled item was pushed and is still stored, in the slot the buffer reports
            state = self.alive[item["i"]]
            assert state["slot"] == item["replay_buffer_idx"]
            assert item["priority"] == state["priority"]
            assert self.uid_of.setdefault(item["i"], item["replay_unique_id"]) == item["replay_unique_id"]
        for item in batch:
            self.alive[item["i"]]["use"] += 1
        for item in batch:
            assert item["use"] == self.alive[item["i"]]["use"]
        for item_id in {item["i"] for item in batch}:  # used up: gone after the sample that used it last
            if self.alive[item_id]["use"] >= self.max_use:
                self.slots[self.alive.pop(item_id)["slot"]] = None
        self.samples.append([(d["replay_unique_id"], d["replay_buffer_idx"], d["i"]) for d in batch])

    @rule(size=st.integers(1, 6))
    def sample(self, size):
        self._check_batch(self.buffer.sample(size, 0), size)

    @precondition(lambda self: self.samples)
    @rule(data=st.data())
    def update(self, data):
        batch = data.draw(st.sampled_from(self.samples))
        new = data.draw(st.lists(priorities, min_size=len(batch), max_size=len(batch)))
        self.buffer.update({"priority": new, "replay_unique_id": [b[0] for b in batch],
                            "replay_buffer_idx": [b[1] for b in batch]})
        for (_, slot, item_id), p in zip(batch, new):
            # an overwritten or removed slot keeps whatever it holds now
            if item_id in self.alive and self.alive[item_id]["slot"] == slot:
                self.alive[item_id]["priority"] = p
                self.max_priority = max(self.max_priority, p)

    @rule()
    def clear(self):
        self.buffer.clear()
        self.slots = [None] * self.capacity
        self.tail = 0
        self.alive.clear()

    @rule(size=st.integers(1, 4), seed=st.integers(0, 100))
    def state_round_trip_gives_the_same_future_samples(self, size, seed):
        clone = AdvancedReplayBuffer(dict(self.cfg, seed=seed))
        clone.load_state_dict(self.buffer.state_dict())
        assert clone.count() == self.buffer.count()
        original = self.buffer.sample(size, 0)
        assert clone.sample(size, 0) == original
        self._check_batch(original, size)

    @invariant()
    def count_matches_the_model(self):
        if hasattr(self, "buffer"):
            assert self.buffer.count() == len(self.alive) <= self.capacity


TestAdvancedBufferModel = AdvancedBufferModel.TestCase
TestAdvancedBufferModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


class NaiveBufferModel(RuleBasedStateMachine):
    """The naive buffer holds exactly the newest ``capacity`` items pushed since the last clear."""

    @initialize(capacity=st.integers(1, 8), seed=st.integers(0, 2 ** 16))
    def setup(self, capacity, seed):
        self.buffer = NaiveReplayBuffer(dict(replay_buffer_size=capacity, seed=seed))
        self.capacity = capacity
        self.pushed: list[int] = []
        self.next_id = 0

    @rule(n=st.integers(1, 10))
    def push(self, n):
        items = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        self.buffer.push(items, 0)
        self.pushed.extend(items)

    @rule(size=st.integers(1, 6), replace=st.booleans(), newest=st.one_of(st.none(), st.integers(1, 8)))
    def sample(self, size, replace, newest):
        window = self.pushed[-self.capacity:]
        sample_range = None if newest is None else slice(-newest, None)
        pool = window if newest is None else window[-newest:]
        batch = self.buffer.sample(size, 0, sample_range=sample_range, replace=replace)
        if not pool or (len(pool) < size and not replace):
            assert batch is None
            return
        assert len(batch) == size and set(batch) <= set(pool)
        if not replace:
            assert len(set(batch)) == size

    @rule()
    def clear(self):
        self.buffer.clear()
        self.pushed = []

    @invariant()
    def count_is_bounded(self):
        if hasattr(self, "buffer"):
            assert self.buffer.count() == min(len(self.pushed), self.capacity)


TestNaiveBufferModel = NaiveBufferModel.TestCase
TestNaiveBufferModel.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
