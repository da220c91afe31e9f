"""``SequenceReplayBuffer``: transitions in push order, sampled as fixed-length windows (for recurrent policies)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ding.config.ranges import at_least
from ding.utils import BUFFER_REGISTRY, ConfigError, ReplayBufferError

from .base_buffer import check_sample_size
from .naive_buffer import NaiveReplayBuffer


@BUFFER_REGISTRY.register("sequence")
class SequenceReplayBuffer(NaiveReplayBuffer):
    """Stores transitions like the naive buffer; a sample is a list of windows of consecutive transitions.

    A window follows push order, so push each environment's transitions as one contiguous chunk (the collectors do)
    and let the policy mask across ``done`` flags: a window may span the end of one episode and the start of the
    next.
    """

    config = dict(
        type="sequence",  # registry name
        replay_buffer_size=10000,  # how many TRANSITIONS the buffer holds; the oldest are overwritten first
        replay_buffer_start_size=0,  # sample() returns None until at least this many transitions are stored
        sequence_len=None,  # window length when sample() is called without one (e.g. by the serial pipeline)
        deepcopy=False,  # sample() returns deep copies (default: new lists of shallow-copied transitions)
        enable_track_used_data=False,  # pass every evicted transition to the callback of set_used_data_callback()
        seed=None,  # seed of the buffer's own RNG; None draws one from numpy's global RNG at construction
        share_frames=True,  # keep each frame of uint8 (k, H, W) frame stacks once (frame_sharing.py)
    )
    config_ranges = {"sequence_len": at_least(1, integer=True)}

    def _check_config(self) -> None:
        super()._check_config()
        if self._cfg.sequence_len is not None:
            _check_sequence(self._cfg.sequence_len, "sequence_len", ConfigError)

    def sample(self, batch: int, *args: Any, cur_learner_iter: int | None = None, sequence: int | None = None,
               sample_range: slice | None = None, replace: bool = False) -> list[list] | None:
        """``batch`` windows of ``sequence`` consecutive transitions (oldest first); None (logged) if not available.

        Two call forms: the common one ``sample(batch, cur_learner_iter)`` (window length from ``sequence=`` or the
        config's ``sequence_len``), and DI-engine's ``sample(batch, sequence, cur_learner_iter, sample_range=None,
        replace=False)``. ``sample_range`` selects transitions by age; every window lies inside it.
        """
        if len(args) == 1:
            cur_learner_iter = _merge_arg("cur_learner_iter", args[0], cur_learner_iter)
        elif len(args) >= 2:
            if len(args) > 4:
                raise TypeError("SequenceReplayBuffer.sample: takes at most 5 positional arguments, "
                                f"got {len(args) + 1}")
            sequence = _merge_arg("sequence", args[0], sequence)
            cur_learner_iter = _merge_arg("cur_learner_iter", args[1], cur_learner_iter)
            if len(args) >= 3:
                sample_range = _merge_arg("sample_range", args[2], sample_range)
            if len(args) == 4:
                replace = args[3]
        batch = check_sample_size(type(self).__name__, batch)
        if sequence is None:
            sequence = self._cfg.sequence_len
        if sequence is None:
            raise ReplayBufferError(f"buffer '{self._instance_name}' (sequence): no window length; pass sequence=... "
                                    "or set sequence_len in the buffer config")
        sequence = _check_sequence(sequence, "sequence", ReplayBufferError)
        with self._lock:
            self._check_open("sample")
            if batch == 0:
                return []
            start, stop = self._storage.resolve_range(sample_range, type(self).__name__)
            starts = max(stop - start - sequence + 1, 0)
            reason = self._start_size_refusal()
            if reason is None and (starts == 0 or (starts < batch and not replace)):
                reason = (f"buffer '{self._instance_name}': asked for {batch} windows of {sequence} transitions but "
                          f"{stop - start} stored transitions give {starts} window starts; sample() returns None. "
                          "Collect more data first, lower the batch size, or use replace=True")
            if reason is not None:
                self._throttled("sample", reason)
                return None
            first = self._rng.choice(starts, batch, replace=replace) + start
            positions = first[:, None] + np.arange(sequence, dtype=np.int64)[None, :]
            slots = self._storage.slots_of(positions).tolist()
            data = self._storage.data
            windows = [[data[s] for s in row] for row in slots]
        return self._copy_out_nested(windows)


def _merge_arg(name: str, positional: Any, keyword: Any) -> Any:
    if keyword is not None:
        raise TypeError(f"SequenceReplayBuffer.sample: got {name} both positionally and as a keyword")
    return positional


def _check_sequence(value: Any, name: str, error: type[Exception]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise error(f"SequenceReplayBuffer: {name} must be a positive int (window length), got {value!r}")
    return int(value)

