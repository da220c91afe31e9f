"""DI-engine's per-env caches for hand-written collectors: :class:`CachePool` (the last obs / policy output of each
env, one entry per policy) and :class:`TrajBuffer` (an env's running trajectory, bounded to ``maxlen``)."""
from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence


class CachePool:
    """One slot per env. ``update({env_id: x})`` stores ``x`` for those envs; ``update([{env_id: x0}, {env_id: x1}])``
    (one dict per policy, as battle collectors produce) stores ``[x0, x1]``. ``pool[env_id]`` is the stored item
    (a one-element list unwrapped), None after ``reset(env_id)``."""

    def __init__(self, name: str, env_num: int, deepcopy: bool = False) -> None:
        self.name = name
        self._pool: list[list[Any] | None] = [None] * env_num
        self._deepcopy = deepcopy

    def update(self, data: Mapping[int, Any] | Sequence[Mapping[int, Any]]) -> None:
        per_policy = [data] if isinstance(data, Mapping) else list(data)
        for index, items in enumerate(per_policy):
            for env_id, item in items.items():
                item = copy.deepcopy(item) if self._deepcopy else item
                if index == 0:
                    self._pool[env_id] = [item]
                else:
                    slot = self._pool[env_id]
                    if slot is None:
                        raise KeyError(f"CachePool '{self.name}': env {env_id} is missing from the first policy's "
                                       "dict of this update")
                    slot.append(item)

    def __getitem__(self, idx: int) -> Any:
        slot = self._pool[idx]
        return slot[0] if slot is not None and len(slot) == 1 else slot

    def reset(self, idx: int) -> None:
        self._pool[idx] = None


class TrajBuffer(list):
    """A list that keeps only the newest ``maxlen`` items (None: unbounded); ``deepcopy`` copies what is appended."""

    def __init__(self, maxlen: float | None, *args: Any, deepcopy: bool = False, **kwargs: Any) -> None:
        self._maxlen = maxlen
        self._deepcopy = deepcopy
        super().__init__(*args, **kwargs)

    def append(self, data: Any) -> None:
        if self._maxlen is not None:
            excess = len(self) + 1 - self._maxlen
            if excess > 0:
                del self[:int(excess)]
        super().append(copy.deepcopy(data) if self._deepcopy else data)
