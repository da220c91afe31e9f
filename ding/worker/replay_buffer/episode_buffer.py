"""``EpisodeReplayBuffer``: whole episodes are the items; sample episodes or fixed-length pieces of them."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ding.config.ranges import at_least
from ding.utils import BUFFER_REGISTRY, ConfigError, ReplayBufferError

from .base_buffer import check_sample_size
from .naive_buffer import NaiveReplayBuffer


@BUFFER_REGISTRY.register("episode")
class EpisodeReplayBuffer(NaiveReplayBuffer):
    """Stores episodes (lists of transitions); ``replay_buffer_size`` counts episodes.

    With ``episode_len=None`` ``sample(n)`` returns ``n`` whole episodes. With ``episode_len=L`` it returns ``n``
    pieces of ``L`` consecutive transitions, drawn uniformly over every such piece in the stored episodes (so a long
    episode is picked more often than a short one); episodes shorter than ``L`` are never picked.
    """

    config = dict(
        type="episode",  # registry name
        replay_buffer_size=1000,  # how many EPISODES the buffer holds; the oldest are overwritten first
        replay_buffer_start_size=0,  # sample() returns None until at least this many episodes are stored
        episode_len=None,  # None: sample whole episodes; an int L: sample pieces of L consecutive transitions
        deepcopy=False,  # sample() returns deep copies (default: new lists of shallow-copied transitions)
        enable_track_used_data=False,  # pass every evicted episode to the callback of set_used_data_callback()
        seed=None,  # seed of the buffer's own RNG; None draws one from numpy's global RNG at construction
        share_frames=True,  # keep each frame of uint8 (k, H, W) frame stacks once (frame_sharing.py)
    )
    config_ranges = {"episode_len": at_least(1, integer=True)}

    def __init__(self, cfg: Mapping[str, Any] | None, tb_logger: Any = None,
                 exp_name: str = "default_experiment", instance_name: str = "buffer") -> None:
        super().__init__(cfg, tb_logger, exp_name, instance_name)
        self._lengths = np.zeros(self._storage.capacity, dtype=np.int64)

    def _check_config(self) -> None:
        super()._check_config()
        length = self._cfg.episode_len
        if length is not None and (isinstance(length, bool) or not isinstance(length, (int, np.integer))
                                   or length < 1):
            raise ConfigError(f"EpisodeReplayBuffer: episode_len must be None or a positive int, got {length!r}")

    def _as_items(self, data: Any) -> list:
        """``data`` is one episode (a list of transition dicts) or a list of episodes."""
        if not isinstance(data, list):
            raise ReplayBufferError(f"buffer '{self._instance_name}' (episode): push an episode (a list of "
                                    f"transitions) or a list of episodes, got {type(data).__name__}")
        episodes = [data] if data and isinstance(data[0], Mapping) else data
        for i, episode in enumerate(episodes):
            if isinstance(episode, (str, bytes, Mapping)) or not isinstance(episode, Sequence) or len(episode) == 0:
                raise ReplayBufferError(f"buffer '{self._instance_name}' (episode): episode {i} is "
                                        f"{_describe(episode)}; each episode must be a non-empty list of transitions")
        return episodes

    def _on_write(self, slots: np.ndarray, items: list) -> None:
        self._lengths[slots] = [len(episode) for episode in items]

    def sample(self, size: int, cur_learner_iter: int = 0, sample_range: slice | None = None,
               replace: bool = False) -> list | None:
        """``size`` episodes, or ``size`` pieces of ``episode_len`` transitions; None (logged) if not available.

        ``sample_range`` selects episodes by age, oldest first.
        """
        if self._cfg.episode_len is None:
            return super().sample(size, cur_learner_iter, sample_range, replace)
        size = check_sample_size(type(self).__name__, size)
        length = int(self._cfg.episode_len)
        with self._lock:
            self._check_open("sample")
            if size == 0:
                return []
            start, stop = self._storage.resolve_range(sample_range, type(self).__name__)
            slots = self._storage.slots_of(np.arange(start, stop, dtype=np.int64))
            pieces = np.maximum(self._lengths[slots] - length + 1, 0)
            available = int(pieces.sum())
            reason = self._start_size_refusal()
            if reason is None and (available == 0 or (available < size and not replace)):
                reason = (f"buffer '{self._instance_name}': asked for {size} pieces of episode_len={length} "
                          f"transitions but the stored episodes hold {available}; sample() returns None. Collect "
                          "more (or longer) episodes, lower the batch size or episode_len, or use replace=True")
            if reason is not None:
                self._throttled("sample", reason)
                return None
            piece = self._rng.choice(available, size, replace=replace)
            ends = np.cumsum(pieces)
            which = np.searchsorted(ends, piece, side="right")
            offsets = piece - (ends[which] - pieces[which])
            data = self._storage.data
            groups = [data[s][o:o + length] for s, o in zip(slots[which].tolist(), offsets.tolist())]
        return self._copy_out_nested(groups)

    def _copy_out(self, items: list) -> list:
        return self._copy_out_nested(items)

    def load_state_dict(self, _state_dict: Mapping[str, Any]) -> None:
        with self._lock:
            super().load_state_dict(_state_dict)
            self._lengths[:] = [0 if episode is None else len(episode) for episode in self._storage.data]

    def _on_clear(self) -> None:
        self._lengths[:] = 0


def _describe(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 0:
        return "empty"
    return f"a {type(value).__name__}"
