import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ding.rl_utils import get_nstep_return_data, get_train_sample

GAMMA = 0.9


def make_episode(length, end="terminated"):
    """Transitions with obs = step index, reward = step + 1 (shape (1,)); the last one ends as ``end``."""
    trans = []
    for i in range(length):
        last = i == length - 1
        trans.append({
            "obs": np.array([i], np.float32),
            "next_obs": np.array([i + 1], np.float32),
            "action": np.array(i % 2),
            "reward": np.array([i + 1.0], np.float32),
            "done": last and end == "terminated",
            "truncated": last and end == "truncated",
        })
    return trans


def naive_nstep(episode, nstep):
    """Reference: a straightforward per-sample loop over one complete episode."""
    out = []
    for i in range(len(episode)):
        end = min(i + nstep - 1, len(episode) - 1)
        rewards = [float(episode[j]["reward"][0]) for j in range(i, end + 1)]
        out.append({
            "obs": episode[i]["obs"][0], "reward": rewards + [0.0] * (nstep - len(rewards)),
            "next_obs": episode[end]["next_obs"][0], "done": bool(episode[end]["done"]),
            "value_gamma": GAMMA ** len(rewards),
        })
    return out


def collect_in_chunks(episode, traj_len, nstep):
    """A collector following the documented contract: call at traj_len or episode end; keep the last nstep-1
    transitions after a chunk that did not end the episode."""
    cache, samples = [], []
    for t in episode:
        cache.append(t)
        ended = t["done"] or t["truncated"]
        if len(cache) >= traj_len or ended:
            samples += get_nstep_return_data(cache, nstep, GAMMA)
            cache = [] if ended or nstep == 1 else cache[-(nstep - 1):]
    return samples


def as_plain(samples):
    return [{"obs": float(s["obs"][0]), "reward": [float(r) for r in s["reward"]], "next_obs": float(s["next_obs"][0]),
             "done": s["done"], "value_gamma": float(s["value_gamma"])} for s in samples]


def assert_same(samples, reference):
    assert len(samples) == len(reference)
    for got, ref in zip(as_plain(samples), reference):
        assert got["obs"] == ref["obs"] and got["next_obs"] == ref["next_obs"] and got["done"] == ref["done"]
        assert got["reward"] == pytest.approx(ref["reward"])
        assert got["value_gamma"] == pytest.approx(ref["value_gamma"], rel=1e-6)


def test_open_chunk_returns_only_complete_windows():
    chunk = make_episode(6, end="none")
    samples = get_nstep_return_data(chunk, 3, GAMMA)
    assert len(samples) == 4  # the last nstep-1 = 2 transitions wait for the next chunk
    s = samples[1]
    assert s["reward"].tolist() == [2.0, 3.0, 4.0] and s["reward"].dtype == np.float32
    assert s["next_obs"][0] == 4.0 and s["done"] is False
    assert s["value_gamma"] == pytest.approx(GAMMA**3)
    assert s["obs"] is chunk[1]["obs"] and s["action"] is chunk[1]["action"]  # no copies
    assert "truncated" not in s


def test_termination_pads_rewards_and_sets_done():
    samples = get_nstep_return_data(make_episode(5, "terminated"), 3, GAMMA)
    assert len(samples) == 5
    assert samples[3]["reward"].tolist() == [4.0, 5.0, 0.0] and samples[3]["done"] is True
    assert samples[4]["reward"].tolist() == [5.0, 0.0, 0.0] and samples[4]["next_obs"][0] == 5.0
    assert samples[2]["done"] is True  # the window 2..4 contains the termination
    assert samples[1]["done"] is False and samples[1]["next_obs"][0] == 4.0


def test_truncation_bootstraps_with_shorter_discount():
    samples = get_nstep_return_data(make_episode(5, "truncated"), 3, GAMMA)
    assert len(samples) == 5
    assert [s["done"] for s in samples] == [False] * 5
    assert samples[3]["next_obs"][0] == 5.0 and samples[3]["value_gamma"] == pytest.approx(GAMMA**2)
    assert samples[4]["value_gamma"] == pytest.approx(GAMMA)
    assert samples[2]["value_gamma"] == pytest.approx(GAMMA**3)


def test_windows_do_not_cross_an_episode_boundary_inside_the_list():
    two = make_episode(3, "terminated") + make_episode(3, "truncated")
    samples = get_nstep_return_data(two, 3, GAMMA)
    assert len(samples) == 6
    assert samples[1]["reward"].tolist() == [2.0, 3.0, 0.0] and samples[1]["done"] is True
    assert samples[3]["reward"].tolist() == [1.0, 2.0, 3.0] and samples[3]["obs"][0] == 0.0


def test_chunk_shorter_than_window_returns_nothing_until_it_ends():
    chunk = make_episode(4, "none")
    assert get_nstep_return_data(chunk[:2], 3, GAMMA) == []
    assert get_nstep_return_data([], 3, GAMMA) == []


@pytest.mark.parametrize("traj_len", [1, 2, 4, 7, 100])
@pytest.mark.parametrize("end", ["terminated", "truncated"])
def test_chunked_collection_equals_whole_episode(traj_len, end):
    episode = make_episode(11, end)
    assert_same(collect_in_chunks(episode, traj_len, 3), naive_nstep(episode, 3))


@settings(max_examples=60, deadline=None)
@given(length=st.integers(1, 25), nstep=st.integers(1, 5), traj_len=st.integers(1, 9),
       end=st.sampled_from(["terminated", "truncated"]))
def test_chunked_collection_property(length, nstep, traj_len, end):
    episode = make_episode(length, end)
    assert_same(collect_in_chunks(episode, traj_len, nstep), naive_nstep(episode, nstep))


def test_scalar_rewards_and_bad_rewards():
    chunk = make_episode(3, "terminated")
    for t in chunk:
        t["reward"] = float(t["reward"][0])
    assert get_nstep_return_data(chunk, 2, GAMMA)[0]["reward"].tolist() == [1.0, 2.0]
    chunk[0]["reward"] = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="reward must be a scalar or a shape-\\(1,\\) array"):
        get_nstep_return_data(chunk, 2, GAMMA)
    with pytest.raises(ValueError, match="nstep must be >= 1"):
        get_nstep_return_data(chunk, 0, GAMMA)


def test_get_train_sample_unroll():
    data = list(range(7))
    assert get_train_sample(data, 1) is data
    assert get_train_sample(data, 3) == [[0, 1, 2], [3, 4, 5], [4, 5, 6]]
    assert get_train_sample(data, 3, "drop") == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="unroll_len must be >= 1"):
        get_train_sample(data, 0)
    with pytest.raises(ValueError, match="last_fn_type must be 'last', 'drop' or 'null_padding'"):
        get_train_sample(data, 2, "pad")
    with pytest.raises(TypeError, match="padding needs dict samples"):
        get_train_sample(data, 3, "null_padding")


def test_get_train_sample_of_dicts_gives_dicts_of_lists_and_pads_with_null_steps():
    """DI-engine's form for recurrent policies: one dict per sequence, each key a list of unroll_len values."""
    data = [{"obs": np.full(2, i, np.float32), "action": np.array(i), "reward": np.array([1.0]), "done": False}
            for i in range(5)]
    full = get_train_sample(data, 2, "drop")
    assert len(full) == 2 and [o.tolist() for o in full[1]["obs"]] == [[2, 2], [3, 3]]
    last = get_train_sample(data, 2, "last")
    assert [int(a) for a in last[-1]["action"]] == [3, 4]
    assert last[-1]["obs"][0] is not last[-2]["obs"][1], "the filled-in step is a copy"
    padded = get_train_sample(data, 2, "null_padding")
    tail = padded[-1]
    assert tail["obs"][1].tolist() == [0, 0] and float(tail["reward"][1][0]) == 0.0 and tail["done"] == [False, True]
    assert data[4]["done"] is False and "null" not in data[4], "the samples themselves are not changed"
    short = get_train_sample(data[:1], 3, "last")  # no full sequence before: null steps behind the residual
    assert len(short) == 1 and short[0]["done"] == [False, True, True]
    given = get_train_sample(data[:1], 2, "null_padding", null_transition={"obs": np.ones(2), "action": np.array(-1),
                                                                            "reward": np.array([0.0]), "done": True})
    assert int(given[0]["action"][1]) == -1
