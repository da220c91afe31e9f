"""Ring storage shared by the buffers: slots in write order, holes for removed items, chronological addressing."""
from __future__ import annotations

from typing import Any

import numpy as np


class CircularStorage:
    """``capacity`` slots written round-robin.

    A slot is *valid* while it holds an item; an item removed early (``max_use``, staleness) leaves an empty slot until
    the write pointer comes round again. "Chronological position" ``k`` counts written slots from the oldest (0) to the
    newest (``filled - 1``); ``sample_range`` slices are taken over those positions.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.data: list[Any] = [None] * capacity
        self.valid = np.zeros(capacity, dtype=bool)
        self.tail = 0  # next slot to write
        self.filled = 0  # slots written since the last clear, at most capacity
        self.valid_count = 0
        self.push_count = 0  # items ever pushed; never reset, so it also numbers items uniquely

    @property
    def oldest(self) -> int:
        return self.tail if self.filled == self.capacity else 0

    def write(self, items: list[Any], want_evicted: bool) -> tuple[np.ndarray, int, list[Any]]:
        """Store ``items`` (oldest first). Returns their slots, the number of the first stored item, evicted items.

        More items than slots: only the newest ``capacity`` are stored; the others count as pushed and evicted.
        """
        n_total = len(items)
        dropped: list[Any] = []
        if n_total > self.capacity:
            dropped = items[:n_total - self.capacity] if want_evicted else []
            items = items[n_total - self.capacity:]
        n = len(items)
        slots = (self.tail + np.arange(n, dtype=np.int64)) % self.capacity
        overwritten = slots[self.valid[slots]]
        evicted = [self.data[s] for s in overwritten.tolist()] + dropped if want_evicted else []
        end = self.tail + n
        if end <= self.capacity:
            self.data[self.tail:end] = items
        else:
            split = self.capacity - self.tail
            self.data[self.tail:] = items[:split]
            self.data[:end - self.capacity] = items[split:]
        self.valid[slots] = True
        self.valid_count += n - overwritten.size
        self.tail = end % self.capacity
        self.filled = min(self.capacity, self.filled + n)
        first_number = self.push_count + (n_total - n)
        self.push_count += n_total
        return slots, first_number, evicted

    def remove(self, slots: np.ndarray) -> list[Any]:
        """Empty the (distinct, valid) ``slots``; returns the removed items."""
        removed = []
        for s in slots.tolist():
            removed.append(self.data[s])
            self.data[s] = None
        self.valid[slots] = False
        self.valid_count -= slots.size
        return removed

    def clear(self) -> list[Any]:
        """Empty every slot and restart writing at slot 0; returns the removed items, oldest first."""
        removed = self.items_in_order()
        self.data = [None] * self.capacity
        self.valid[:] = False
        self.tail = self.filled = self.valid_count = 0
        return removed

    def resolve_range(self, sample_range: slice | None, owner: str) -> tuple[int, int]:
        """Chronological ``[start, stop)`` selected by ``sample_range`` (None: everything written)."""
        if sample_range is None:
            return 0, self.filled
        if not isinstance(sample_range, slice) or sample_range.step not in (None, 1):
            raise ValueError(f"{owner}.sample: sample_range must be a slice with step 1 over items from oldest to "
                             f"newest, e.g. slice(-1000, None) for the newest 1000; got {sample_range!r}")
        start, stop, _ = sample_range.indices(self.filled)
        return start, max(start, stop)

    def slots_of(self, positions: np.ndarray) -> np.ndarray:
        """Slots of chronological positions."""
        return (self.oldest + positions) % self.capacity

    def segments(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The chronological range ``[start, stop)`` as at most two contiguous slot ranges."""
        n = stop - start
        if n <= 0:
            return []
        lo = (self.oldest + start) % self.capacity
        if lo + n <= self.capacity:
            return [(lo, lo + n)]
        return [(lo, self.capacity), (0, lo + n - self.capacity)]

    def valid_slots_in_order(self) -> np.ndarray:
        slots = self.slots_of(np.arange(self.filled, dtype=np.int64))
        return slots[self.valid[slots]]

    def items_in_order(self) -> list[Any]:
        return [self.data[s] for s in self.valid_slots_in_order().tolist()]

    def state_dict(self) -> dict[str, Any]:
        """The slots written so far (``filled`` of them; every later slot is empty), not all ``capacity``: a
        checkpoint of a 1M-slot buffer holding a few thousand items pickles those items, not a million ``None``s."""
        return {
            "capacity": self.capacity, "data": self.data[:self.filled], "valid": self.valid[:self.filled].copy(),
            "tail": self.tail, "filled": self.filled, "valid_count": self.valid_count, "push_count": self.push_count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s slots (also a state of all ``capacity`` slots, as older versions wrote)."""
        assert int(state["capacity"]) == self.capacity, "callers check the capacity first"
        data, valid = list(state["data"]), np.asarray(state["valid"], dtype=bool)
        if len(data) > self.capacity or len(valid) != len(data) or len(data) < int(state["filled"]):
            raise ValueError(f"a buffer state of {len(data)} items and {len(valid)} valid flags does not fit "
                             f"{self.capacity} slots with {state['filled']} written")
        self.data = data + [None] * (self.capacity - len(data))
        self.valid = np.zeros(self.capacity, dtype=bool)
        self.valid[:len(valid)] = valid
        self.tail = int(state["tail"])
        self.filled = int(state["filled"])
        self.valid_count = int(state["valid_count"])
        self.push_count = int(state["push_count"])
