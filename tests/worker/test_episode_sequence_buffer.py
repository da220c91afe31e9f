"""EpisodeReplayBuffer (episodes as items) and SequenceReplayBuffer (fixed-length windows)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from ding.utils import ConfigError, ReplayBufferError
from ding.worker.replay_buffer import EpisodeReplayBuffer, SequenceReplayBuffer


def _episode(episode_id: int, length: int) -> list[dict]:
    return [{"episode": episode_id, "t": t, "done": t == length - 1} for t in range(length)]


# ---------------------------------------------------------------- episode buffer
def test_episode_buffer_counts_episodes_and_samples_whole_ones():
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=3, seed=0))
    buffer.push([_episode(i, 2 + i) for i in range(4)], cur_collector_envstep=0)
    assert buffer.count() == 3 and buffer.push_count == 4
    episodes = buffer.sample(3, 0)
    assert sorted(ep[0]["episode"] for ep in episodes) == [1, 2, 3]
    assert all(len(ep) == ep[0]["episode"] + 2 for ep in episodes)


def test_a_single_episode_can_be_pushed_directly():
    buffer = EpisodeReplayBuffer(dict(seed=0))
    buffer.push(_episode(0, 5))
    assert buffer.count() == 1 and len(buffer.sample(1, 0)[0]) == 5


def test_sampled_episodes_are_copies():
    buffer = EpisodeReplayBuffer(dict(seed=0))
    buffer.push([_episode(0, 3)])
    sampled = buffer.sample(1, 0)[0]
    sampled[0]["t"] = 99
    sampled.append({"extra": True})
    again = buffer.sample(1, 0)[0]
    assert again[0]["t"] == 0 and len(again) == 3


def test_episode_len_samples_pieces_uniformly_over_all_pieces():
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=10, episode_len=3, seed=0))
    buffer.push([_episode(0, 2), _episode(1, 4), _episode(2, 7)])  # pieces: 0, 2 and 5
    pieces = [p for _ in range(700) for p in buffer.sample(4, 0, replace=True)]
    assert all(len(p) == 3 and [s["t"] for s in p] == list(range(p[0]["t"], p[0]["t"] + 3)) for p in pieces)
    assert all(len({s["episode"] for s in p}) == 1 for p in pieces)
    share = np.bincount([p[0]["episode"] for p in pieces], minlength=3) / len(pieces)
    np.testing.assert_allclose(share, [0, 2 / 7, 5 / 7], atol=0.03)
    starts = {(p[0]["episode"], p[0]["t"]) for p in pieces}
    assert starts == {(1, 0), (1, 1)} | {(2, t) for t in range(5)}


def test_episode_len_without_enough_pieces_returns_none(caplog):
    buffer = EpisodeReplayBuffer(dict(episode_len=5, seed=0))
    buffer.push([_episode(0, 3), _episode(1, 5)])
    with caplog.at_level(logging.INFO, logger="ding.replay_buffer"):
        assert buffer.sample(2, 0) is None
    assert "asked for 2 pieces of episode_len=5 transitions but the stored episodes hold 1" in caplog.text
    assert len(buffer.sample(1, 0)) == 1
    assert len(buffer.sample(3, 0, replace=True)) == 3


def test_episode_buffer_state_and_clear():
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=4, episode_len=2, seed=0))
    buffer.push([_episode(i, 3) for i in range(5)])
    state = buffer.state_dict()
    expected = buffer.sample(3, 0)
    other = EpisodeReplayBuffer(dict(replay_buffer_size=4, episode_len=2, seed=1))
    other.load_state_dict(state)
    assert other.sample(3, 0) == expected
    other.clear()
    assert other.count() == 0 and other.sample(1, 0) is None


def test_episode_buffer_errors():
    buffer = EpisodeReplayBuffer(dict(seed=0))
    with pytest.raises(ReplayBufferError, match="push an episode .* or a list of episodes, got dict"):
        buffer.push({"t": 0})
    with pytest.raises(ReplayBufferError, match="episode 1 is empty; each episode must be a non-empty list"):
        buffer.push([_episode(0, 2), []])
    with pytest.raises(ReplayBufferError, match="episode 0 is a int"):
        buffer.push([3])
    with pytest.raises(ConfigError, match="episode_len must be None or a positive int, got 0"):
        EpisodeReplayBuffer(dict(episode_len=0))


# ---------------------------------------------------------------- sequence buffer
def _transitions(n: int) -> list[dict]:
    return [{"t": t} for t in range(n)]


def test_sequence_buffer_samples_consecutive_windows_in_push_order():
    buffer = SequenceReplayBuffer(dict(replay_buffer_size=8, sequence_len=3, seed=0))
    buffer.push(_transitions(11))  # holds 3..10 after wrapping
    for window in buffer.sample(5, 0):
        ts = [s["t"] for s in window]
        assert ts == list(range(ts[0], ts[0] + 3)) and 3 <= ts[0] <= 8


def test_both_call_forms():
    buffer = SequenceReplayBuffer(dict(sequence_len=4, seed=0))
    buffer.push(_transitions(20))
    assert [len(w) for w in buffer.sample(2, 7)] == [4, 4]  # sample(batch, cur_learner_iter): config length
    assert [len(w) for w in buffer.sample(2, 6, 7)] == [6, 6]  # DI-engine: sample(batch, sequence, cur_learner_iter)
    newest = buffer.sample(2, 2, 0, slice(-3, None))
    assert all([s["t"] for s in w] in ([17, 18], [18, 19]) for w in newest)
    assert len(buffer.sample(2, cur_learner_iter=3, sequence=5)[0]) == 5
    assert len(buffer.sample(30, 2, 0, None, True)) == 30


def test_windows_are_distinct_without_replacement():
    buffer = SequenceReplayBuffer(dict(sequence_len=2, seed=0))
    buffer.push(_transitions(6))  # 5 window starts
    starts = [w[0]["t"] for w in buffer.sample(5, 0)]
    assert sorted(starts) == [0, 1, 2, 3, 4]


def test_sequence_buffer_not_enough_returns_none(caplog):
    buffer = SequenceReplayBuffer(dict(sequence_len=5, seed=0))
    buffer.push(_transitions(6))
    with caplog.at_level(logging.INFO, logger="ding.replay_buffer"):
        assert buffer.sample(3, 0) is None
    assert "asked for 3 windows of 5 transitions but 6 stored transitions give 2 window starts" in caplog.text


def test_sequence_buffer_errors():
    buffer = SequenceReplayBuffer(dict(seed=0))
    buffer.push(_transitions(5))
    with pytest.raises(ReplayBufferError, match="no window length; pass sequence=... or set sequence_len"):
        buffer.sample(2, 0)
    with pytest.raises(ReplayBufferError, match="sequence must be a positive int"):
        buffer.sample(2, 0, sequence=0)
    with pytest.raises(TypeError, match="got sequence both positionally and as a keyword"):
        buffer.sample(2, 3, 0, sequence=3)
    with pytest.raises(TypeError, match="at most 5 positional arguments"):
        buffer.sample(1, 2, 0, None, False, 9)
    with pytest.raises(ConfigError, match="sequence_len must be a positive int"):
        SequenceReplayBuffer(dict(sequence_len=-2))
