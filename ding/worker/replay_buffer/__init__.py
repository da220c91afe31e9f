"""Replay buffers: ``naive`` (uniform; alias ``deque``), ``advanced`` (prioritized), ``episode``, ``sequence``."""
from .advanced_buffer import AdvancedReplayBuffer
from .base_buffer import IBuffer, create_buffer, get_buffer_cls
from .episode_buffer import EpisodeReplayBuffer
from .naive_buffer import NaiveReplayBuffer
from .segment_tree import MinSegmentTree, SumSegmentTree
from .sequence_buffer import SequenceReplayBuffer

__all__ = [
    "IBuffer", "create_buffer", "get_buffer_cls", "NaiveReplayBuffer", "AdvancedReplayBuffer", "EpisodeReplayBuffer",
    "SequenceReplayBuffer", "SumSegmentTree", "MinSegmentTree",
]
