"""Replay buffers: ``naive`` (uniform; alias ``deque``), ``advanced`` (prioritized), ``episode``, ``sequence``."""
from .base_buffer import IBuffer, create_buffer, get_buffer_cls
from .naive_buffer import NaiveReplayBuffer
from .advanced_buffer import AdvancedReplayBuffer
from .episode_buffer import EpisodeReplayBuffer
from .sequence_buffer import SequenceReplayBuffer
from .segment_tree import MinSegmentTree, SumSegmentTree

__all__ = [
    "IBuffer", "create_buffer", "get_buffer_cls", "NaiveReplayBuffer", "AdvancedReplayBuffer", "EpisodeReplayBuffer",
    "SequenceReplayBuffer", "SumSegmentTree", "MinSegmentTree",
]
