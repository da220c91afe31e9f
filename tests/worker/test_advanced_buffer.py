"""AdvancedReplayBuffer: meta keys, priority updates, max_use, staleness, limits, monitoring, persistence, errors."""
from __future__ import annotations

import logging
import pickle
import struct
import threading
import zlib

import numpy as np
import pytest
import torch

from ding.utils import ConfigError, ReplayBufferError
from ding.worker.replay_buffer import AdvancedReplayBuffer

META = {"replay_unique_id", "replay_buffer_idx", "IS", "use", "staleness", "priority"}


def _buffer(**cfg) -> AdvancedReplayBuffer:
    return AdvancedReplayBuffer(dict(seed=0, **cfg))


def _items(n: int, start: int = 0, **extra) -> list[dict]:
    return [{"i": i, "obs": np.full(4, i, dtype=np.float32), **extra} for i in range(start, start + n)]


def _feedback(batch: list[dict], priority) -> dict:
    return {"priority": list(priority), "replay_unique_id": [d["replay_unique_id"] for d in batch],
            "replay_buffer_idx": [d["replay_buffer_idx"] for d in batch]}


def test_sampled_items_carry_meta_keys_and_are_shallow_copies():
    buffer = _buffer(replay_buffer_size=8)
    data = _items(3)
    buffer.push(data, cur_collector_envstep=0)
    batch = buffer.sample(3, cur_learner_iter=0)
    assert all(META <= set(d) for d in batch)
    item = next(d for d in batch if d["i"] == 1)
    assert item["obs"] is data[1]["obs"] and item is not data[1]
    assert "IS" not in data[1]  # stored dicts are untouched
    assert {type(item[k]) for k in ("IS", "priority")} == {float}
    assert {type(item[k]) for k in ("replay_unique_id", "replay_buffer_idx", "use", "staleness")} == {int}


def test_new_items_get_the_max_priority_or_their_own():
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(2))
    batch = buffer.sample(2, 0)
    buffer.update(_feedback(batch, [5.0, 3.0]))
    buffer.push(_items(1, start=10) + [{"i": 11, "priority": 0.25}])
    priorities = {d["i"]: d["priority"] for _ in range(50) for d in buffer.sample(4, 0)}
    assert priorities[10] == 5.0 and priorities[11] == 0.25


def test_update_skips_slots_overwritten_since_sampling():
    buffer = _buffer(replay_buffer_size=4)
    buffer.push(_items(4))
    batch = buffer.sample(4, 0)
    buffer.push(_items(2, start=100))  # overwrites two of the sampled slots
    buffer.update(_feedback(batch, [9.0] * 4))
    seen = {d["i"]: d["priority"] for _ in range(100) for d in buffer.sample(4, 0)}
    assert seen[100] == 1.0 and seen[101] == 1.0  # the new items keep their own priority
    assert {seen[i] for i in seen if i < 100} == {9.0}


def test_repeated_slots_in_one_update_apply_in_order():
    buffer = _buffer(replay_buffer_size=1, thruput_controller=dict(sample_min_limit_ratio=0.25))
    buffer.push(_items(1))
    batch = buffer.sample(4, 0)  # the only item, four times
    buffer.update(_feedback(batch, [0.5, 0.5, 2.0, 0.25]))
    assert buffer.sample(1, 0)[0]["priority"] == 0.25  # the last entry wins
    buffer.push(_items(1, start=1))
    assert buffer.sample(1, 0)[0]["priority"] == 2.0  # new items get the max over every entry seen


def test_update_accepts_tensors_and_ignores_empty_feedback():
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(4))
    batch = buffer.sample(4, 0)
    buffer.update(None)
    buffer.update({})
    buffer.update({"total_loss": 1.0})  # a learner info without priority keys
    buffer.update({"priority": [], "replay_unique_id": [], "replay_buffer_idx": []})
    buffer.update({"priority": torch.tensor([2.0, 2.0, 2.0, 2.0], requires_grad=True),
                   "replay_unique_id": torch.tensor([d["replay_unique_id"] for d in batch]),
                   "replay_buffer_idx": np.array([d["replay_buffer_idx"] for d in batch])})
    assert {d["priority"] for d in buffer.sample(4, 0)} == {2.0}


def test_update_with_the_last_batch_lists_matches_the_general_path():
    # update() takes a shortcut when handed the id lists of the last sample (what a learner copies from its batch);
    # the result must be the same state as the general path, which converts and checks arrays
    states = []
    for as_arrays in (False, True):
        buffer = _buffer(replay_buffer_size=16, thruput_controller=dict(sample_min_limit_ratio=0.25))
        buffer.push(_items(5))
        for step in range(6):
            batch = buffer.sample(8, step)  # 8 of 5 items: repeated slots in the batch
            info = _feedback(batch, np.linspace(0.5, 3.0, 8) + step)
            if as_arrays:
                info = {k: np.array(v) for k, v in info.items()}
            buffer.push(_items(1, start=100 + step))  # overwrites nothing yet: every id still matches
            buffer.update(info)
        state = buffer.state_dict()
        states.append((state["priority"], state["sum_tree"]["tree"], state["min_tree"]["leaves"], state["use"]))
    for fast, general in zip(*states):
        np.testing.assert_array_equal(fast, general)


@pytest.mark.parametrize("max_use", [float("inf"), 2])
def test_update_right_after_the_sample_matches_the_general_path(max_use):
    # with nothing pushed or removed between sample() and update(), the shortcut also skips checking that the slots
    # still hold the sampled items, and (for a batch without repeats) looking for repeated slots; max_use=2 empties
    # slots inside sample() itself, after which the check must run again
    states = []
    for as_arrays in (False, True):
        buffer = _buffer(replay_buffer_size=16, max_use=max_use,
                         thruput_controller=dict(sample_min_limit_ratio=0.25))
        for step in range(12):
            buffer.push(_items(3, start=10 * step))
            batch = buffer.sample(8 if step % 2 else 2, step)  # 8: repeated slots; 2: mostly distinct
            if batch is None:
                continue
            info = _feedback(batch, np.linspace(0.5, 3.0, len(batch)) + step)
            if as_arrays:
                info = {k: np.array(v) for k, v in info.items()}
            buffer.update(info)
        state = buffer.state_dict()
        states.append((state["priority"], state["sum_tree"]["tree"], state["min_tree"]["leaves"], state["use"],
                       state["uid"]))
    for fast, general in zip(*states):
        np.testing.assert_array_equal(fast, general)
    if max_use == 2:  # no emptied slot got mass back from an update
        empty = states[0][4] < 0
        assert empty.any()
        assert (states[0][1][16:][empty] == 0).all() and (states[0][2][empty] == np.inf).all()


def test_max_use_removes_items_after_their_last_use():
    buffer = _buffer(replay_buffer_size=8, max_use=2, enable_track_used_data=True)
    removed = []
    buffer.set_used_data_callback(removed.extend)
    buffer.push(_items(1))
    first, second = buffer.sample(1, 0)[0], buffer.sample(1, 0)[0]
    assert (first["use"], second["use"]) == (1, 2)
    assert buffer.count() == 0 and [d["i"] for d in removed] == [0]
    assert buffer.sample(1, 0) is None


def test_max_staleness_drops_old_items_before_sampling():
    buffer = _buffer(replay_buffer_size=8, max_staleness=10)
    buffer.push(_items(2, collect_iter=0))
    buffer.push(_items(2, start=10, collect_iter=15))
    batch = buffer.sample(2, 20)
    assert {d["i"] for d in batch} <= {10, 11} and buffer.count() == 2
    assert {d["staleness"] for d in batch} == {5}


def test_items_without_collect_iter_take_the_last_learner_iter():
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(1))
    buffer.sample(1, 7)
    buffer.push(_items(1, start=1))
    stale = {d["i"]: d["staleness"] for _ in range(30) for d in buffer.sample(2, 12)}
    assert stale == {0: 12, 1: 5}


def test_priority_false_samples_uniformly_and_ignores_updates():
    buffer = _buffer(replay_buffer_size=4, priority=False)
    buffer.push(_items(4))
    batch = buffer.sample(4, 0)
    buffer.update(_feedback(batch, [100.0, 0.0, 0.0, 0.0]))
    draws = [d for _ in range(300) for d in buffer.sample(3, 0)]
    assert {d["IS"] for d in draws} == {1.0}
    counts = np.bincount([d["i"] for d in draws], minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), 0.25, atol=0.03)
    used_up = _buffer(replay_buffer_size=4, priority=False, max_use=1)
    used_up.push(_items(4))
    used_up.sample(2, 0)
    assert used_up.count() < 4  # use limits still apply


def test_priority_is_weight_false_gives_unit_weights():
    buffer = _buffer(replay_buffer_size=4, priority_IS_weight=False)
    buffer.push(_items(2))
    batch = buffer.sample(2, 0)
    buffer.update(_feedback(batch, [1.0, 50.0]))
    draws = [d for _ in range(20) for d in buffer.sample(2, 0)]
    assert {d["IS"] for d in draws} == {1.0}
    assert {d["priority"] for d in draws} == {1.0, 50.0}


def test_not_enough_data_returns_none_with_a_message(caplog):
    buffer = AdvancedReplayBuffer(dict(seed=0, replay_buffer_size=16), instance_name="prio")
    buffer.push(_items(3))
    with caplog.at_level(logging.INFO, logger="ding.replay_buffer"):
        assert buffer.sample(4, 0) is None
    assert "buffer 'prio': asked for 4 items but 3 are stored" in caplog.text
    ratio = _buffer(replay_buffer_size=16, thruput_controller=dict(sample_min_limit_ratio=0.5))
    ratio.push(_items(2))
    assert len(ratio.sample(4, 0)) == 4  # with replacement, allowed by the ratio
    start = _buffer(replay_buffer_start_size=5)
    start.push(_items(4))
    assert start.sample(1, 0) is None


def test_sample_range_restricts_to_the_newest_items():
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(11))  # holds 3..10
    seen = {d["i"] for _ in range(100) for d in buffer.sample(4, 0, sample_range=slice(-3, None))}
    assert seen == {8, 9, 10}
    seen = {d["i"] for _ in range(100) for d in buffer.sample(4, 0, sample_range=slice(2, 6))}
    assert seen == {5, 6, 7, 8}


def test_sample_range_without_items_returns_none():
    buffer = _buffer(replay_buffer_size=8, max_use=1)
    buffer.push(_items(4))
    buffer.sample(1, 0, sample_range=slice(-1, None))  # the newest is used up and removed
    assert buffer.sample(1, 0, sample_range=slice(-1, None)) is None
    assert buffer.sample(1, 0, sample_range=slice(5, 8)) is None


def test_push_rate_limit_drops_pushes_and_min_rate_refuses_samples():
    limited = _buffer(replay_buffer_size=64, thruput_controller=dict(push_sample_rate_limit=dict(max=1)))
    limited.push(_items(10))  # nothing sampled yet: never throttled
    limited.sample(5, 0)
    limited.push(_items(10, start=10))  # 10 pushed / 5 sampled > 1: dropped
    assert limited.count() == 10
    starved = _buffer(replay_buffer_size=64, thruput_controller=dict(push_sample_rate_limit=dict(min=10)))
    starved.push(_items(10))
    assert starved.sample(5, 0) is not None
    assert starved.sample(5, 0) is None  # 10 pushed / 5 sampled < 10


class _FakeWriter:
    def __init__(self):
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))


def test_monitoring_writes_sampled_attributes_and_throughput():
    writer = _FakeWriter()
    buffer = AdvancedReplayBuffer(
        dict(seed=0, monitor=dict(sampled_data_attr=dict(average_range=2, print_freq=3),
                                  periodic_thruput=dict(seconds=0))),
        tb_logger=writer, instance_name="buf")
    buffer.push(_items(8))
    for it in range(6):
        buffer.sample(4, it)
    tags = {tag for tag, _, _ in writer.scalars}
    assert {"buf_iter/use_avg", "buf_iter/priority_max", "buf_iter/staleness_avg", "buf_iter/beta"} <= tags
    assert {"buf_sec/pushed_per_sec", "buf_sec/sampled_per_sec", "buf_sec/valid_count"} <= tags
    assert [step for tag, _, step in writer.scalars if tag == "buf_iter/use_avg"] == [2, 5]


def test_beta_setter_restarts_annealing():
    buffer = _buffer(beta=0.5, anneal_step=10)
    buffer.push(_items(4))
    for _ in range(4):
        buffer.sample(1, 0)
    assert buffer.beta == pytest.approx(0.7)
    buffer.beta = 0.2
    assert buffer.beta == 0.2
    for _ in range(10):
        buffer.sample(1, 0)
    assert buffer.beta == 1.0
    with pytest.raises(ValueError, match=r"beta must be in \[0, 1\]"):
        buffer.beta = 1.5


def test_state_dict_resumes_the_same_samples():
    buffer = _buffer(replay_buffer_size=16, max_use=3)
    buffer.push(_items(20))
    batch = buffer.sample(6, 1)
    buffer.update(_feedback(batch, np.linspace(0.1, 3, 6)))
    state = buffer.state_dict()
    ahead = [[(d["i"], d["IS"], d["use"]) for d in buffer.sample(5, 2)] for _ in range(4)]
    resumed = AdvancedReplayBuffer(dict(replay_buffer_size=16, max_use=3, seed=99))
    resumed.load_state_dict(state)
    assert [[(d["i"], d["IS"], d["use"]) for d in resumed.sample(5, 2)] for _ in range(4)] == ahead
    assert resumed.beta == buffer.beta and resumed.count() == buffer.count()


def test_load_state_dict_with_another_alpha_rebuilds_the_leaves():
    buffer = _buffer(replay_buffer_size=8, alpha=1.0)
    buffer.push(_items(2))
    batch = buffer.sample(2, 0)
    buffer.update(_feedback(batch, [1.0 if d["i"] == 0 else 4.0 for d in batch]))
    other = _buffer(replay_buffer_size=8, alpha=0.0)
    other.load_state_dict(buffer.state_dict(), deepcopy=True)
    counts = np.bincount([d["i"] for _ in range(500) for d in other.sample(2, 0)], minlength=2)
    assert abs(counts[0] - counts[1]) < 100  # alpha 0: uniform despite the 1:4 priorities


def test_save_and_load_data_keep_priorities(tmp_path):
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(3))
    batch = buffer.sample(3, 0)
    buffer.update(_feedback(batch, [1.5, 2.5, 3.5]))
    expected = {d["i"]: p for d, p in zip(batch, [1.5, 2.5, 3.5])}
    path = str(tmp_path / "prio.dingbuf")
    buffer.save_data(path)
    other = _buffer(replay_buffer_size=8)
    other.load_data(path)
    assert {d["i"]: d["priority"] for _ in range(40) for d in other.sample(3, 0)} == expected


def test_a_version_1_file_written_by_hand_loads(tmp_path):
    """The documented layout (magic, "<HQI" header, pickled dict) is what load_data reads: files stay loadable."""
    payload = pickle.dumps({"buffer_type": "advanced", "items": [{"i": 1}, {"i": 2}], "priority": [2.0, 3.0]},
                           protocol=4)
    path = tmp_path / "v1.dingbuf"
    path.write_bytes(b"DINGBUF\n" + struct.pack("<HQI", 1, len(payload), zlib.crc32(payload)) + payload)
    buffer = _buffer()
    buffer.load_data(str(path))
    assert {d["i"]: d["priority"] for _ in range(20) for d in buffer.sample(2, 0)} == {1: 2.0, 2: 3.0}


def test_load_data_errors(tmp_path):
    buffer = _buffer()
    with pytest.raises(ReplayBufferError, match="no such file"):
        buffer.load_data(str(tmp_path / "missing"))
    (tmp_path / "other").write_bytes(b"hello world, not a buffer")
    with pytest.raises(ReplayBufferError, match="not a ding replay-buffer file"):
        buffer.load_data(str(tmp_path / "other"))
    buffer.push(_items(3))
    good = tmp_path / "good"
    buffer.save_data(str(good))
    (tmp_path / "cut").write_bytes(good.read_bytes()[:-5])
    with pytest.raises(ReplayBufferError, match="truncated or corrupt"):
        buffer.load_data(str(tmp_path / "cut"))
    raw = bytearray(good.read_bytes())
    raw[-3] ^= 0xFF
    (tmp_path / "flipped").write_bytes(bytes(raw))
    with pytest.raises(ReplayBufferError, match="truncated or corrupt"):
        buffer.load_data(str(tmp_path / "flipped"))
    newer = bytearray(good.read_bytes())
    newer[8:10] = struct.pack("<H", 99)
    (tmp_path / "newer").write_bytes(bytes(newer))
    with pytest.raises(ReplayBufferError, match="format 99.*upgrade ding"):
        buffer.load_data(str(tmp_path / "newer"))
    from ding.worker.replay_buffer import NaiveReplayBuffer
    naive = NaiveReplayBuffer(dict(seed=0))
    naive.push([1, 2])
    naive.save_data(str(tmp_path / "ints"))
    with pytest.raises(ReplayBufferError, match="item 0 of .* is a int; the advanced buffer stores dicts only"):
        buffer.load_data(str(tmp_path / "ints"))


def test_update_errors():
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(4))
    batch = buffer.sample(4, 0)
    info = _feedback(batch, [1.0] * 4)
    with pytest.raises(ReplayBufferError, match="got 3 priorities, 4 replay_unique_id and 4 replay_buffer_idx"):
        buffer.update({**info, "priority": [1.0] * 3})
    with pytest.raises(ReplayBufferError, match=r"priority -1\.0 at position 2; priorities must be finite and >= 0"):
        buffer.update({**info, "priority": [1.0, 1.0, -1.0, 1.0]})
    with pytest.raises(ReplayBufferError, match="priority nan at position 0"):
        buffer.update({**info, "priority": [float("nan"), 1.0, 1.0, 1.0]})
    with pytest.raises(ReplayBufferError, match="priority inf"):
        buffer.update({**info, "priority": [1.0, float("inf"), 1.0, 1.0]})
    with pytest.raises(ReplayBufferError, match=r"lacks \['replay_buffer_idx'\]"):
        buffer.update({"priority": [1.0], "replay_unique_id": [0]})
    with pytest.raises(ReplayBufferError, match=r"replay_buffer_idx out of range \[0, 8\): \[8\]"):
        buffer.update({"priority": [1.0], "replay_unique_id": [0], "replay_buffer_idx": [8]})
    with pytest.raises(ReplayBufferError, match="replay_unique_id must be a list or array of numbers"):
        buffer.update({"priority": [1.0], "replay_unique_id": ["abc"], "replay_buffer_idx": [0]})
    with pytest.raises(ReplayBufferError, match="update\\(\\) takes a dict"):
        buffer.update([1.0])
    with pytest.raises(ReplayBufferError, match="push.. got priority -2"):
        buffer.push({"i": 0, "priority": -2.0})
    with pytest.raises(ReplayBufferError, match="push.. got priority nan"):
        buffer.push([{"i": 0}, {"i": 1, "priority": float("nan")}])
    with pytest.raises(ReplayBufferError, match="'priority' key of a pushed item must be a number"):
        buffer.push({"i": 0, "priority": "high"})
    with pytest.raises(ReplayBufferError, match="priority with 2 values"):
        buffer.push({"i": 0, "priority": np.array([1.0, 2.0])})


def test_other_mappings_and_array_priorities_are_accepted():
    from types import MappingProxyType

    from easydict import EasyDict
    buffer = _buffer()
    buffer.push([MappingProxyType({"i": 0}), EasyDict(i=1, priority=np.array([3.0])),
                 {"i": 2, "priority": torch.tensor(2.0)}])
    items = {d["i"]: d for _ in range(30) for d in buffer.sample(3, 0)}
    assert isinstance(items[1], EasyDict) and items[1].priority == 3.0
    assert items[0]["priority"] == 1.0 and items[2]["priority"] == 2.0


def test_push_errors_name_the_bad_item():
    buffer = _buffer()
    with pytest.raises(ReplayBufferError, match="item 1 of the pushed list is a int; push dicts"):
        buffer.push([{"i": 0}, 5])
    with pytest.raises(ReplayBufferError, match="the pushed item is a str"):
        buffer.push("transition")
    assert buffer.count() == 0


def test_config_errors():
    with pytest.raises(ConfigError, match="alpah: unknown key; did you mean 'alpha'"):
        AdvancedReplayBuffer(dict(alpah=0.5))
    with pytest.raises(ConfigError,
                       match=r"thruput_controller.window_second: unknown key; did you mean 'window_seconds'"):
        AdvancedReplayBuffer(dict(thruput_controller=dict(window_second=3)))
    with pytest.raises(ConfigError, match=r"beta must be a number in \[0, 1\], got 1.5"):
        AdvancedReplayBuffer(dict(beta=1.5))
    with pytest.raises(ConfigError, match="max_use must be a number >= 1"):
        AdvancedReplayBuffer(dict(max_use=0))
    with pytest.raises(ConfigError, match="alpha must be a number >= 0, got 'high'"):
        AdvancedReplayBuffer(dict(alpha="high"))
    with pytest.raises(ConfigError, match="window_seconds must be a number of seconds > 0"):
        AdvancedReplayBuffer(dict(thruput_controller=dict(window_seconds=0)))
    with pytest.raises(ConfigError, match=r"push_sample_rate_limit.min must be a number >= 0"):
        AdvancedReplayBuffer(dict(thruput_controller=dict(push_sample_rate_limit=dict(min=-1))))


def test_default_config_is_a_fresh_copy_with_cfg_type():
    cfg = AdvancedReplayBuffer.default_config()
    assert cfg.cfg_type == "AdvancedReplayBufferDict" and cfg.type == "advanced"
    cfg.thruput_controller.window_seconds = 1
    assert AdvancedReplayBuffer.default_config().thruput_controller.window_seconds == 30


def test_threads_push_sample_update_clear_keep_the_trees_consistent():
    buffer = _buffer(replay_buffer_size=50, max_use=4)
    errors: list[BaseException] = []
    stop = threading.Event()

    def loop(fn):
        def run():
            try:
                while not stop.is_set():
                    fn()
            except BaseException as e:  # noqa: BLE001 - collected and re-raised in the main thread
                errors.append(e)
        return threading.Thread(target=run)

    def sample_and_update():
        batch = buffer.sample(8, 0)
        if batch:
            buffer.update(_feedback(batch, np.random.default_rng().random(8) + 0.1))

    counter = iter(range(10 ** 9))
    threads = [loop(lambda: buffer.push(_items(5, start=next(counter) * 5))), loop(sample_and_update),
               loop(sample_and_update), loop(lambda: (stop.wait(0.02), buffer.clear()))]
    for t in threads:
        t.start()
    stop.wait(0.4)
    stop.set()
    for t in threads:
        t.join(5)
    assert not errors
    state = buffer.state_dict()
    valid = np.zeros(50, dtype=bool)  # the state holds the slots written since the last clear; the rest are empty
    valid[:len(state["storage"]["valid"])] = state["storage"]["valid"]
    leaves = state["sum_tree"]["tree"][len(state["sum_tree"]["tree"]) // 2:][:50]
    assert ((leaves > 0) == valid).all() and valid.sum() == buffer.count() <= 50


def test_compiled_and_numpy_trees_give_the_same_samples(monkeypatch):
    """The compiled segment tree (where the install built it) and the numpy one are interchangeable: same draws, same
    weights, through pushes, priority updates, max_use removals and overwrites."""
    from ding.worker.replay_buffer import segment_tree

    if not segment_tree.native_available():
        pytest.skip("the compiled segment tree is not built here (tests/worker/test_segment_tree.py says why)")
    runs = []
    for form in ("1", "0"):
        monkeypatch.setenv("DING_NATIVE_TREES", form)
        buffer = _buffer(replay_buffer_size=300, max_use=6)
        assert buffer._sum_tree.native == (form == "1")
        rng = np.random.default_rng(11)
        draws = []
        for step in range(120):
            buffer.push(_items(7, start=step * 7))
            batch = buffer.sample(32, step)
            if batch is None:
                continue
            draws.append(([d["i"] for d in batch], [d["IS"] for d in batch]))
            buffer.update(_feedback(batch, rng.random(32) * 10.0 ** rng.integers(-3, 3)))
        runs.append(draws)
    assert len(runs[0]) == len(runs[1]) > 100
    for (items_a, weights_a), (items_b, weights_b) in zip(*runs):
        assert items_a == items_b
        np.testing.assert_allclose(weights_a, weights_b, rtol=1e-9)


def test_a_state_of_items_alone_is_pushed_as_new_items():
    """DI-engine's demonstration files are ``{'data': [items]}``: loading one empties the buffer and pushes them."""
    buffer = _buffer(replay_buffer_size=8)
    buffer.push(_items(3, reward=-1.0), 0)
    demo = [{"obs": np.full(4, i, np.float32), "reward": float(i)} for i in range(5)]
    buffer.load_state_dict({"data": demo}, deepcopy=True)
    assert buffer.count() == 5
    batch = buffer.sample(5, 0)
    assert sorted(b["reward"] for b in batch) == [0.0, 1.0, 2.0, 3.0, 4.0], "the items from before the load are gone"
    assert all(META <= set(b) for b in batch)
    assert "replay_unique_id" not in demo[0], "deepcopy=True leaves the caller's items alone"
    with pytest.raises(ReplayBufferError, match="needs a list of items"):
        buffer.load_state_dict({"data": "not items"})
