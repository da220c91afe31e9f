"""``NaiveReplayBuffer``: a thread-safe ring of items sampled uniformly."""
from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from ding.config.ranges import at_least
from ding.utils import BUFFER_REGISTRY, ConfigError, ReplayBufferError

from .base_buffer import IBuffer, ThrottledLog, check_sample_size, make_rng, resolve_buffer_config
from .buffer_io import read_buffer_file, write_buffer_file
from .frame_sharing import FrameSharer, copy_out, materialize
from .storage import CircularStorage

UsedDataCallback = Callable[[list], None]


@BUFFER_REGISTRY.register("naive")
class NaiveReplayBuffer(IBuffer):
    """Stores any items (usually transition dicts); ``sample`` draws uniformly, with or without replacement.

    Every public method holds the buffer's lock, so collectors, learners and servers may call it from different
    threads.
    """

    config = dict(
        type="naive",  # registry name ('deque' is an alias)
        replay_buffer_size=10000,  # how many items the buffer holds; the oldest are overwritten first
        replay_buffer_start_size=0,  # sample() returns None until at least this many items are stored
        deepcopy=False,  # sample() returns deep copies (default: shallow copies of the stored dicts)
        enable_track_used_data=False,  # pass every evicted item to the callback of set_used_data_callback()
        seed=None,  # seed of the buffer's own RNG; None draws one from numpy's global RNG at construction
        # sampled items get the stacks back as arrays, as pushed
        share_frames=True,  # keep each frame of uint8 (k, H, W) frame stacks (Atari obs) once, not k times
    )
    config_ranges = {
        "replay_buffer_size": at_least(1, integer=True),
        "replay_buffer_start_size": at_least(0, integer=True),
        "seed": at_least(0, integer=True),
    }

    def __init__(
        self,
        cfg: Mapping[str, Any] | None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "buffer",
    ) -> None:
        self._cfg = resolve_buffer_config(type(self), cfg)
        self._check_config()
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._tb_logger = tb_logger
        self._lock = threading.RLock()
        self._rng = make_rng(self._cfg.seed)
        self._storage = CircularStorage(int(self._cfg.replay_buffer_size))
        self._track_used = bool(self._cfg.enable_track_used_data)
        self._used_data_callback: UsedDataCallback | None = None
        self._logger = logging.getLogger(f"ding.replay_buffer.{instance_name}")
        self._throttled = ThrottledLog(self._logger)
        self._sharer = FrameSharer() if self._cfg.share_frames else None
        self._closed = False

    # ------------------------------------------------------------------ config and properties
    def _check_config(self) -> None:
        cfg = self._cfg
        size = cfg.replay_buffer_size
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ConfigError(f"{type(self).__name__}: replay_buffer_size must be a positive int, got {size!r}")
        start = cfg.replay_buffer_start_size
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start <= size:
            raise ConfigError(f"{type(self).__name__}: replay_buffer_start_size must be an int in [0, "
                              f"replay_buffer_size={size}], got {start!r}")

    @property
    def replay_buffer_size(self) -> int:
        return self._storage.capacity

    @property
    def push_count(self) -> int:
        """Items pushed since construction (``clear`` does not reset it)."""
        return self._storage.push_count

    def count(self) -> int:
        return self._storage.valid_count

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(instance_name={self._instance_name!r}, count={self.count()}, "
                f"replay_buffer_size={self.replay_buffer_size})")

    # ------------------------------------------------------------------ lifecycle
    def set_used_data_callback(self, callback: UsedDataCallback | None) -> None:
        """``callback(items)`` receives every item that leaves the buffer (overwritten, removed, cleared).

        Called outside the buffer's lock, in the thread that caused the eviction. Needs
        ``enable_track_used_data=True`` (parallel mode uses it to delete the data files behind evicted metadata).
        """
        if callback is not None and not self._track_used:
            raise ReplayBufferError(f"buffer '{self._instance_name}': set enable_track_used_data=True in the buffer "
                                    "config to receive evicted items")
        self._used_data_callback = callback

    def close(self) -> None:
        """Empty the buffer (evicted items go to the used-data callback) and refuse further use. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            evicted = self._storage.clear()
            self._on_clear()
        self._report_used(evicted)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise ReplayBufferError(f"buffer '{self._instance_name}': {what}() after close(); close() empties the "
                                    "buffer, so create a new one (and take state_dict() before closing)")

    def _report_used(self, evicted: list) -> None:
        if not evicted or not self._track_used:
            return
        if self._used_data_callback is None:
            self._throttled("no_used_callback", f"buffer '{self._instance_name}': enable_track_used_data=True but no "
                            "callback is set (set_used_data_callback); evicted items are not reported")
            return
        if self._sharer is not None:
            evicted = copy_out(evicted)
        self._used_data_callback(evicted)

    # ------------------------------------------------------------------ data in
    def _as_items(self, data: Any) -> list:
        items = data if isinstance(data, list) else [data]
        if any(item is None for item in items):
            raise ReplayBufferError(f"buffer '{self._instance_name}': cannot push None")
        return items

    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        """Store one item, or each item of a list (``cur_collector_envstep`` is accepted for the common interface)."""
        self._store(self._as_items(data))

    def _store(self, items: list) -> None:
        if not items:
            return
        with self._lock:
            self._check_open("push")
            if self._sharer is not None:
                items = self._sharer.pack(items)
            slots, _, evicted = self._storage.write(items, self._track_used)
            self._on_write(slots, items[len(items) - slots.size:])
        self._report_used(evicted)

    def _on_write(self, slots: np.ndarray, items: list) -> None:
        """Called under the lock after ``items`` were written to ``slots`` (subclasses keep per-slot metadata)."""

    def update(self, info: Mapping[str, Any] | None) -> None:
        """Nothing to update in a uniform buffer (priority feedback is ignored)."""

    def clear(self) -> None:
        with self._lock:
            evicted = self._storage.clear()
            self._on_clear()
        self._report_used(evicted)

    def _on_clear(self) -> None:
        """Called under the lock after the storage was emptied."""

    # ------------------------------------------------------------------ data out
    def _start_size_refusal(self) -> str | None:
        stored, start_size = self._storage.valid_count, int(self._cfg.replay_buffer_start_size)
        if stored < start_size:
            return (f"buffer '{self._instance_name}': {stored} items stored, fewer than "
                    f"replay_buffer_start_size={start_size}; sample() returns None until it fills")
        return None

    def _not_enough(self, size: int, available: int, in_range: bool, replace: bool) -> str | None:
        """Why ``size`` items cannot be drawn now (None if they can)."""
        reason = self._start_size_refusal()
        if reason is None and (available == 0 or (available < size and not replace)):
            where = " in sample_range" if in_range else ""
            reason = (f"buffer '{self._instance_name}': asked for {size} items but {available} are stored{where}; "
                      "sample() returns None. Collect more data first, lower the batch size, or use replace=True")
        return reason

    def sample(
        self,
        size: int,
        cur_learner_iter: int = 0,
        sample_range: slice | None = None,
        replace: bool = False,
    ) -> list | None:
        """Draw ``size`` items uniformly; None (with a logged reason) if the buffer cannot serve them yet.

        ``sample_range`` selects items by age, oldest first: ``slice(-1000, None)`` means the newest 1000.
        """
        size = check_sample_size(type(self).__name__, size)
        with self._lock:
            self._check_open("sample")
            if size == 0:
                return []
            start, stop = self._storage.resolve_range(sample_range, type(self).__name__)
            reason = self._not_enough(size, stop - start, sample_range is not None, replace)
            if reason is not None:
                self._throttled("sample", reason)
                return None
            positions = self._rng.choice(stop - start, size, replace=replace) + start
            data = self._storage.data
            items = [data[s] for s in self._storage.slots_of(positions).tolist()]
        return self._copy_out(items)

    def _copy_out(self, items: list) -> list:
        out = [_shallow_copy(item) for item in items]
        if self._sharer is not None:
            materialize(out)
        return copy.deepcopy(out) if self._cfg.deepcopy else out

    def _copy_out_nested(self, groups: list[list]) -> list[list]:
        """Like :meth:`_copy_out` for lists of transitions (episodes, windows): every transition is copied."""
        out = [[_shallow_copy(item) for item in group] for group in groups]
        if self._sharer is not None:
            for group in out:
                materialize(group)
        return copy.deepcopy(out) if self._cfg.deepcopy else out

    # ------------------------------------------------------------------ persistence
    def save_data(self, file_name: str) -> None:
        """Write the stored items, oldest first, to ``file_name`` (see ``buffer_io`` for the format)."""
        with self._lock:
            items = self._storage.items_in_order()
        if self._sharer is not None:  # the file holds plain arrays (a stack shared by two items is written once)
            items = copy_out(items)
        write_buffer_file(file_name, str(self._cfg.type), items)

    def load_data(self, file_name: str) -> None:
        """Push every item stored in ``file_name``."""
        self.push(read_buffer_file(file_name)["items"])

    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            self._check_open("state_dict")
            return {
                "buffer_type": type(self).__name__,
                "storage": self._storage.state_dict(),
                "rng": copy.deepcopy(self._rng.bit_generator.state),
            }

    def load_state_dict(self, _state_dict: Mapping[str, Any]) -> None:
        if self._load_items_only(_state_dict):
            return
        with self._lock:
            self._check_open("load_state_dict")
            self._check_state(_state_dict)
            try:
                self._storage.load_state_dict(_state_dict["storage"])
            except (KeyError, TypeError, ValueError) as e:
                raise ReplayBufferError(f"buffer '{self._instance_name}': load_state_dict(): the saved storage is "
                                        f"damaged ({type(e).__name__}: {e}); resume from another checkpoint or start "
                                        "with an empty buffer") from e
            self._rng.bit_generator.state = copy.deepcopy(_state_dict["rng"])

    def _load_items_only(self, state: Any, deepcopy: bool = False) -> bool:
        """A state of items alone, ``{'data': [item, ...]}`` (DI-engine's demonstration files): the buffer is emptied
        and the items pushed as new ones (with the default priority). False for any other state."""
        if not (isinstance(state, Mapping) and set(state) == {"data"}):
            return False
        items = state["data"]
        if not isinstance(items, list):
            raise ReplayBufferError(f"buffer '{self._instance_name}': load_state_dict({{'data': ...}}) needs a list of "
                                    f"items, got {type(items).__name__}")
        self.clear()
        self.push(copy.deepcopy(items) if deepcopy else items)
        return True

    def _check_state(self, state: Mapping[str, Any]) -> None:
        if not isinstance(state, Mapping) or "storage" not in state or "rng" not in state:
            raise ReplayBufferError(f"buffer '{self._instance_name}': load_state_dict() needs a dict returned by "
                                    "state_dict()")
        if state.get("buffer_type") != type(self).__name__:
            raise ReplayBufferError(f"buffer '{self._instance_name}': the state comes from a "
                                    f"{state.get('buffer_type')}, not a {type(self).__name__}; load it into the same "
                                    "buffer type (use save_data/load_data to move items between types)")
        saved = int(state["storage"]["capacity"])
        if saved != self._storage.capacity:
            raise ReplayBufferError(f"buffer '{self._instance_name}': the state was saved with replay_buffer_size="
                                    f"{saved} but this buffer has {self._storage.capacity}; set replay_buffer_size="
                                    f"{saved} to resume from it")


def _shallow_copy(item: Any) -> Any:
    if type(item) is dict:
        return item.copy()
    if isinstance(item, (dict, list)):
        return copy.copy(item)
    return item


BUFFER_REGISTRY.register("deque", NaiveReplayBuffer)
