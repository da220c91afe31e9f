"""DI-engine's config files import this module to register the ``'deque'`` replay buffer
(``create_config.replay_buffer = dict(type='deque', import_names=['ding.data.buffer.deque_buffer_wrapper'])``).

In ding, ``'deque'`` is the uniform ``NaiveReplayBuffer`` (see docs/replay_buffers.md), registered with
``ding.worker``; importing this module makes sure it is.
"""
from ding.worker.replay_buffer import NaiveReplayBuffer as DequeBufferWrapper

__all__ = ["DequeBufferWrapper"]
