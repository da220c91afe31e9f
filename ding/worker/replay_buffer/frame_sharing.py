"""Frame stacks stored once per frame: a replay buffer keeps each image frame of a uint8 frame stack once.

An Atari observation is a stack of the last ``k`` frames, ``(k, H, W)`` uint8 (oldest first). Consecutive
observations of one env share ``k - 1`` frames, and a transition's ``next_obs`` is the next transition's ``obs``, so
a buffer holding the stacks as they come keeps every frame ``k`` times (28,224 bytes per Pong transition instead of
7,056). :class:`FrameSharer` replaces such stacks in the pushed items by :class:`FrameStack` records that point at
single frames (``bytes``, shared between the stacks holding the same frame), and :func:`materialize` turns them back
into ``(k, H, W)`` uint8 arrays when items leave the buffer: the learner gets the same arrays as before (same values,
dtype, shape and frame order), each a fresh array.

Frames are matched by content among the frames of the current and the previous push (the window where the stacks
that share frames arrive: a chunk of one env's transitions, its n-step windows, the next chunk's first ``obs``), so no
assumption about env ids, episode ends or ``nstep`` is needed: a frame equal to one already kept is shared, any other
is kept. Nothing has to be released: a frame lives as long as a stored record points at it.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

MIN_FRAME_BYTES = 256  # smaller frames are not worth a record (stacks of tiny arrays stay arrays)


class FrameStack:
    """A ``(k, H, W)`` uint8 frame stack as ``k`` shared ``bytes`` frames (oldest first)."""

    __slots__ = ("frames", "shape")
    # whether any record was ever made in this process (packed, or unpickled from a checkpoint): until then no
    # stored item can hold one, and sampling skips the look at every key of every item (:func:`materialize`)
    made_any = False

    def __init__(self, frames: tuple[bytes, ...], shape: tuple[int, int, int]) -> None:
        FrameStack.made_any = True
        self.frames = frames
        self.shape = shape

    def array(self) -> np.ndarray:
        """The stack as a new, writable ``(k, H, W)`` uint8 array."""
        out = np.empty(self.shape, dtype=np.uint8)
        h, w = self.shape[1], self.shape[2]
        for i, f in enumerate(self.frames):
            out[i] = np.frombuffer(f, dtype=np.uint8).reshape(h, w)
        return out

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape))

    def __repr__(self) -> str:
        return f"FrameStack(shape={self.shape}, dtype=uint8)"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return FrameStack, (self.frames, self.shape)


def is_frame_stack(value: Any) -> bool:
    """A uint8 array of shape ``(k, H, W)`` with ``k >= 2`` and frames of at least ``MIN_FRAME_BYTES`` bytes."""
    return (type(value) is np.ndarray and value.dtype == np.uint8 and value.ndim == 3 and value.shape[0] >= 2
            and value.shape[1] * value.shape[2] >= MIN_FRAME_BYTES)


class FrameSharer:
    """Packs the frame stacks of pushed items (:meth:`pack`); keeps the frames of the last two pushes to match."""

    __slots__ = ("_frames", "_old_frames", "_stacks", "_old_stacks")

    def __init__(self) -> None:
        self._frames: dict[bytes, bytes] = {}  # frame content -> the one kept copy (current push)
        self._old_frames: dict[bytes, bytes] = {}  # ... of the previous push
        # id(array) -> (array, its record): the same array object (next_obs of one transition, obs of the next)
        # gets the same record without reading it again; the array is held so its id stays unique
        self._stacks: dict[int, tuple[np.ndarray, FrameStack]] = {}
        self._old_stacks: dict[int, tuple[np.ndarray, FrameStack]] = {}

    def pack(self, items: list[Any]) -> list[Any]:
        """``items`` with every top-level frame stack of a dict item (or of the dicts in a list item: an episode)
        replaced by a :class:`FrameStack`; changed dicts are copies (the caller's are left as they are)."""
        self._old_frames, self._frames = self._frames, {}
        self._old_stacks, self._stacks = self._stacks, {}
        return [[self._pack_one(x) for x in item] if type(item) is list else self._pack_one(item) for item in items]

    def _pack_one(self, item: Any) -> Any:
        if isinstance(item, dict):
            keys = [k for k, v in item.items() if is_frame_stack(v)]
            if keys:
                item = item.copy() if type(item) is dict else copy.copy(item)
                for k in keys:
                    item[k] = self._record(item[k])
        return item

    def _record(self, stack: np.ndarray) -> FrameStack:
        key = id(stack)
        hit = self._stacks.get(key) or self._old_stacks.get(key)
        if hit is not None and hit[0] is stack:
            self._stacks[key] = hit
            return hit[1]
        frames = []
        for frame in stack:
            b = frame.tobytes()
            kept = self._frames.get(b)
            if kept is None:
                kept = self._old_frames.get(b, b)
                self._frames[kept] = kept
            frames.append(kept)
        record = FrameStack(tuple(frames), stack.shape)
        self._stacks[key] = (stack, record)
        return record

    def clear(self) -> None:
        self._frames, self._old_frames, self._stacks, self._old_stacks = {}, {}, {}, {}


def materialize(items: list[Any], made: dict[int, np.ndarray] | None = None) -> list[Any]:
    """``items`` (dicts, or lists of dicts, that the caller owns: fresh copies) with their :class:`FrameStack`
    values turned into arrays, in place; a record held by two items gives both the same array, as the stacks were
    shared before they were stored."""
    if not FrameStack.made_any:  # no record exists in this process: nothing to turn back (the common, non-image case)
        return items
    made = {} if made is None else made
    for item in items:
        if type(item) is list:
            materialize(item, made)
        elif isinstance(item, dict):
            for k, v in item.items():
                if type(v) is FrameStack:
                    arr = made.get(id(v))
                    if arr is None:
                        arr = made[id(v)] = v.array()
                    item[k] = arr
    return items


def copy_out(items: list[Any]) -> list[Any]:
    """Shallow copies of stored items (dicts, or lists of dicts) with their frame stacks as arrays (for files and
    callbacks: a stack shared by two items is one array)."""
    return materialize([[_copy(x) for x in item] if type(item) is list else _copy(item) for item in items])


def _copy(item: Any) -> Any:
    return (item.copy() if type(item) is dict else copy.copy(item)) if isinstance(item, dict) else item
