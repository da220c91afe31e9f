"""NaiveReplayBuffer: ring storage, uniform sampling, persistence, used-data tracking, threads."""
from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from ding.utils import ConfigError, ReplayBufferError
from ding.worker.replay_buffer import NaiveReplayBuffer


def _buffer(**cfg) -> NaiveReplayBuffer:
    return NaiveReplayBuffer(dict(seed=0, **cfg))


def test_push_one_or_many_and_overwrite_the_oldest():
    buffer = _buffer(replay_buffer_size=5)
    buffer.push({"i": 0}, cur_collector_envstep=0)
    buffer.push([{"i": i} for i in range(1, 8)], cur_collector_envstep=0)
    assert buffer.count() == len(buffer) == 5
    assert buffer.push_count == 8 and buffer.replay_buffer_size == 5
    sampled = buffer.sample(5, 0)
    assert sorted(d["i"] for d in sampled) == [3, 4, 5, 6, 7]


def test_pushing_more_than_capacity_at_once_keeps_the_newest():
    buffer = _buffer(replay_buffer_size=3)
    buffer.push(list(range(10)))
    assert sorted(buffer.sample(3, 0)) == [7, 8, 9]
    assert buffer.push_count == 10


def test_sample_without_replacement_is_distinct_and_with_replacement_can_exceed_count():
    buffer = _buffer(replay_buffer_size=100)
    buffer.push(list(range(20)))
    assert len(set(buffer.sample(20, 0))) == 20
    assert len(buffer.sample(50, 0, replace=True)) == 50


def test_sample_is_uniform():
    buffer = _buffer(replay_buffer_size=10)
    buffer.push(list(range(10)))
    counts = np.bincount(np.concatenate([buffer.sample(5, 0) for _ in range(4000)]), minlength=10)
    np.testing.assert_allclose(counts / counts.sum(), 0.1, atol=0.01)


def test_sample_range_selects_by_age_after_wrapping():
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(list(range(13)))  # holds 5..12, the ring has wrapped
    newest = {x for _ in range(200) for x in buffer.sample(2, 0, sample_range=slice(-3, None))}
    assert newest == {10, 11, 12}
    oldest = {x for _ in range(200) for x in buffer.sample(2, 0, sample_range=slice(0, 2))}
    assert oldest == {5, 6}


def test_sampled_dicts_are_shallow_copies():
    buffer = _buffer()
    obs = np.zeros(3)
    buffer.push({"obs": obs, "reward": 1.0})
    item = buffer.sample(1, 0)[0]
    item["reward"] = 5.0
    assert item["obs"] is obs  # no array copied on the hot path
    assert buffer.sample(1, 0)[0]["reward"] == 1.0
    deep = _buffer(deepcopy=True)
    deep.push({"obs": obs})
    assert deep.sample(1, 0)[0]["obs"] is not obs


def test_too_few_items_returns_none_with_a_message(caplog):
    buffer = _buffer(replay_buffer_size=10)
    buffer.push([1, 2, 3])
    with caplog.at_level(logging.INFO, logger="ding.replay_buffer"):
        assert buffer.sample(4, 0) is None
    assert "asked for 4 items but 3 are stored" in caplog.text
    empty = NaiveReplayBuffer(dict(seed=0), instance_name="empty")
    with caplog.at_level(logging.INFO, logger="ding.replay_buffer"):
        assert empty.sample(1, 0, replace=True) is None
    assert "buffer 'empty': asked for 1 items but 0 are stored" in caplog.text
    assert buffer.sample(0, 0) == []


def test_start_size_holds_sampling_back(caplog):
    buffer = _buffer(replay_buffer_start_size=5)
    buffer.push([1, 2, 3])
    with caplog.at_level(logging.WARNING, logger="ding.replay_buffer"):
        assert buffer.sample(2, 0) is None
    assert "fewer than replay_buffer_start_size=5" in caplog.text
    buffer.push([4, 5])
    assert len(buffer.sample(2, 0)) == 2


def test_update_is_a_no_op_and_clear_empties():
    buffer = _buffer()
    buffer.push([1, 2])
    buffer.update({"priority": [1.0], "replay_unique_id": [0], "replay_buffer_idx": [0]})
    buffer.update(None)
    buffer.clear()
    assert buffer.count() == 0 and buffer.push_count == 2
    buffer.push([7])
    assert buffer.sample(1, 0) == [7]


def test_state_dict_resumes_exactly():
    buffer = _buffer(replay_buffer_size=6)
    buffer.push(list(range(9)))
    buffer.sample(3, 0)
    state = buffer.state_dict()
    expected = [buffer.sample(3, 0) for _ in range(5)]
    other = NaiveReplayBuffer(dict(replay_buffer_size=6, seed=123))
    other.load_state_dict(state)
    assert [other.sample(3, 0) for _ in range(5)] == expected
    assert other.push_count == 9 and other.count() == 6


def test_state_dict_of_a_partly_filled_buffer_holds_only_the_written_slots_and_resumes_exactly():
    buffer = _buffer(replay_buffer_size=1000)
    buffer.push([{"i": i} for i in range(7)])
    state = buffer.state_dict()
    assert len(state["storage"]["data"]) == len(state["storage"]["valid"]) == 7  # not 1,000 slots
    expected = [buffer.sample(3, 0) for _ in range(4)]
    buffer.push([{"i": i} for i in range(7, 12)])
    expected.append(buffer.sample(5, 0))
    other = NaiveReplayBuffer(dict(replay_buffer_size=1000, seed=5))
    other.load_state_dict(state)
    got = [other.sample(3, 0) for _ in range(4)]
    other.push([{"i": i} for i in range(7, 12)])  # writing goes on at slot 7, as in the original
    got.append(other.sample(5, 0))
    assert got == expected and other.count() == 12


def test_state_dict_with_all_slots_as_older_versions_wrote_still_loads():
    buffer = _buffer(replay_buffer_size=10)
    buffer.push(list(range(4)))
    state = buffer.state_dict()
    storage = state["storage"]
    storage["data"] = list(storage["data"]) + [None] * 6
    storage["valid"] = np.concatenate([storage["valid"], np.zeros(6, dtype=bool)])
    expected = [buffer.sample(2, 0) for _ in range(3)]
    other = _buffer(replay_buffer_size=10)
    other.load_state_dict(state)
    assert [other.sample(2, 0) for _ in range(3)] == expected


def test_a_damaged_storage_state_fails_with_one_error_naming_the_buffer():
    buffer = _buffer(replay_buffer_size=10)
    buffer.push(list(range(4)))
    state = buffer.state_dict()
    state["storage"]["valid"] = state["storage"]["valid"][:2]
    with pytest.raises(ReplayBufferError, match="buffer 'buffer': load_state_dict.*damaged"):
        _buffer(replay_buffer_size=10).load_state_dict(state)


def test_state_dict_errors():
    state = _buffer(replay_buffer_size=6).state_dict()
    with pytest.raises(ReplayBufferError, match="replay_buffer_size=6 but this buffer has 7"):
        _buffer(replay_buffer_size=7).load_state_dict(state)
    with pytest.raises(ReplayBufferError, match="needs a dict returned by state_dict"):
        _buffer().load_state_dict({"items": []})


def test_save_and_load_data(tmp_path):
    buffer = _buffer(replay_buffer_size=4)
    buffer.push([{"i": i, "obs": np.full(2, i)} for i in range(6)])
    path = tmp_path / "buf.dingbuf"
    buffer.save_data(str(path))
    other = _buffer(replay_buffer_size=10)
    other.load_data(str(path))
    assert other.count() == 4
    assert sorted(d["i"] for d in other.sample(4, 0)) == [2, 3, 4, 5]


def test_used_data_callback_receives_evicted_items():
    buffer = _buffer(replay_buffer_size=3, enable_track_used_data=True)
    evicted = []
    buffer.set_used_data_callback(evicted.extend)
    buffer.push([0, 1, 2, 3, 4])
    assert evicted == [0, 1]
    buffer.push([5])
    assert evicted == [0, 1, 2]
    buffer.clear()
    assert evicted == [0, 1, 2, 3, 4, 5]
    buffer.push([6])
    buffer.close()
    assert evicted[-1] == 6


def test_used_data_callback_needs_tracking_enabled():
    with pytest.raises(ReplayBufferError, match="set enable_track_used_data=True"):
        _buffer().set_used_data_callback(print)


def test_close_is_idempotent_and_refuses_further_use():
    buffer = _buffer()
    with buffer:
        buffer.push([1])
    buffer.close()
    with pytest.raises(ReplayBufferError, match=r"push\(\) after close\(\)"):
        buffer.push([2])
    with pytest.raises(ReplayBufferError, match=r"sample\(\) after close\(\)"):
        buffer.sample(1, 0)
    with pytest.raises(ReplayBufferError, match="take state_dict"):
        buffer.state_dict()


def test_input_errors():
    buffer = _buffer()
    with pytest.raises(ReplayBufferError, match="cannot push None"):
        buffer.push([1, None])
    with pytest.raises(ValueError, match="size must be a non-negative int"):
        buffer.sample(-1, 0)
    buffer.push([1, 2, 3])
    with pytest.raises(ValueError, match="slice with step 1"):
        buffer.sample(1, 0, sample_range=slice(None, None, 2))


def test_config_errors():
    with pytest.raises(ConfigError, match="replay_buffer_sise: unknown key; did you mean 'replay_buffer_size'"):
        NaiveReplayBuffer(dict(replay_buffer_sise=10))
    with pytest.raises(ConfigError, match="replay_buffer_size must be a positive int"):
        NaiveReplayBuffer(dict(replay_buffer_size=0))
    with pytest.raises(ConfigError, match="replay_buffer_start_size must be an int"):
        NaiveReplayBuffer(dict(replay_buffer_size=5, replay_buffer_start_size=6))
    with pytest.raises(ConfigError, match="cfg must be a dict"):
        NaiveReplayBuffer(5)


def test_seed_from_numpy_global_rng_is_reproducible():
    draws = []
    for _ in range(2):
        np.random.seed(7)
        buffer = NaiveReplayBuffer(dict())
        buffer.push(list(range(100)))
        draws.append(buffer.sample(10, 0))
    assert draws[0] == draws[1]


def test_threads_push_sample_update_clear():
    buffer = _buffer(replay_buffer_size=64)
    errors: list[BaseException] = []
    stop = threading.Event()

    def run(fn):
        def loop():
            try:
                while not stop.is_set():
                    fn()
            except BaseException as e:  # noqa: BLE001 - collected and re-raised in the main thread
                errors.append(e)
        return threading.Thread(target=loop)

    def sample_and_update():
        batch = buffer.sample(8, 0)
        assert batch is None or len(batch) == 8
        buffer.update({})

    threads = [run(lambda: buffer.push(list(range(10)))), run(sample_and_update), run(buffer.clear),
               run(lambda: buffer.count() <= 64 or errors.append(AssertionError("count > capacity")))]
    for t in threads:
        t.start()
    stop.wait(0.3)
    stop.set()
    for t in threads:
        t.join(5)
    assert not errors
    assert 0 <= buffer.count() <= 64
