"""R2D2's overlapping sequences (``policy.replay_period``): every step of a trajectory is trained in some sequence,
episode starts included (front-padded burn-in), each sequence keeps its own start state and episode, and padding
changes neither the burn-in state, the loss nor the priority."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding.envs import create_env_manager
from ding.policy import R2D2Policy
from ding.policy.policy_factory import PolicyCollectMode
from ding.policy.r2d2 import _burn_in, overlapping_sequences
from ding.utils import ConfigError
from ding.worker import SampleSerialCollector
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 8])


def r2d2(burnin=3, learn=5, period=3, **overrides):
    torch.manual_seed(0)
    cfg = dict(model=MODEL, burnin_step=burnin, learn_unroll_len=learn, replay_period=period, nstep=2,
               priority=True, priority_IS_weight=False)
    cfg.update(overrides)
    return R2D2Policy(cfg)


def episode(ep: int, length: int, terminated: bool = True) -> list[dict]:
    """A synthetic episode whose observations name (episode, step); LSTM states are zeros at the start only."""
    out = []
    for t in range(length):
        last = t == length - 1
        out.append(dict(obs=np.array([ep, t, 0, 0], np.float32), next_obs=np.array([ep, t + 1, 0, 0], np.float32),
                        action=np.int64(t % 2), reward=np.array([1.0], np.float32), done=last and terminated,
                        truncated=last and not terminated, collect_iter=0,
                        prev_state=np.full((2, 8), 0.0 if t == 0 else ep + t / 100, np.float32)))
    return out


def chunked(policy: R2D2Policy, episodes: list[list[dict]], traj_len: int) -> list[dict]:
    """get_train_sample on the chunks SampleSerialCollector would cut: a chunk is flushed at an episode's end or
    when it holds traj_len + keep transitions, and keeps its last ``nstep - 1`` (policy attribute) for the next."""
    keep = policy.collect_mode.get_attribute("nstep") - 1
    samples, cache = [], []
    for ep in episodes:
        for t in ep:
            cache.append(t)
            if t["done"] or t["truncated"]:
                samples += policy.collect_mode.get_train_sample(cache)
                cache.clear()
            elif len(cache) >= traj_len + keep:
                samples += policy.collect_mode.get_train_sample(cache)
                del cache[:len(cache) - keep]
    return samples


def trained_steps(seq: dict, burnin: int) -> list[tuple[int, int]]:
    obs, mask = seq["obs"][:-1], seq["mask"]
    return [(int(o[0]), int(o[1])) for o in obs[burnin:][mask[burnin:]]]


@pytest.mark.parametrize("burnin,learn,period,traj_len", [(3, 5, 3, 8), (3, 5, 5, 8), (4, 16, 8, 20), (2, 6, 1, 1),
                                                          (0, 4, 2, 4), (5, 3, 3, 30)])
def test_every_step_is_trained_in_some_sequence_episode_starts_included(burnin, learn, period, traj_len):
    policy = r2d2(burnin, learn, period)
    lengths = [1, 2, 7, 13, 40, 41]
    episodes = [episode(ep, n, terminated=ep % 2 == 0) for ep, n in enumerate(lengths)]
    samples = chunked(policy, [[dict(t) for t in ep] for ep in episodes], traj_len)
    T = burnin + learn
    covered: dict[tuple[int, int], int] = {}
    for seq in samples:
        assert seq["obs"].shape == (T + 1, 4) and seq["mask"].shape == (T,)
        real = seq["obs"][:-1][seq["mask"]]
        eps, steps = real[:, 0].astype(int), real[:, 1].astype(int)
        assert (eps == eps[0]).all(), "a sequence never mixes two episodes"
        assert np.array_equal(steps, np.arange(steps[0], steps[0] + len(steps))), "consecutive steps"
        start_state = 0.0 if steps[0] == 0 else eps[0] + steps[0] / 100
        assert np.allclose(seq["prev_state"], start_state), "the LSTM state before the sequence's first real step"
        front = int(np.argmax(seq["mask"]))
        assert front == 0 or steps[0] == 0, "only an episode's first sequences are padded at the front"
        assert front <= burnin, "front padding only ever fills burn-in steps"
        # the step after the last real one is its next_obs; done only on an episode's terminating step
        n = int(seq["mask"].sum())
        assert seq["obs"][front + n][1] == steps[-1] + 1
        assert seq["done"][seq["mask"]].tolist() == [bool(episodes[eps[0]][s]["done"]) for s in steps]
        for key in trained_steps(seq, burnin):
            covered[key] = covered.get(key, 0) + 1
    expected = {(ep, t) for ep, n in enumerate(lengths) for t in range(n)}
    assert set(covered) == expected
    assert max(covered.values()) <= -(-learn // period)  # at most ceil(L / P) times
    if period == learn:  # no overlap of trained parts: each step exactly once
        assert set(covered.values()) == {1}


def test_the_first_sequence_of_an_episode_trains_from_step_0_after_a_padded_burn_in():
    policy = r2d2(burnin=3, learn=5, period=3)
    first, second, third = policy.collect_mode.get_train_sample(episode(0, 12))[:3]
    assert first["mask"].tolist() == [False] * 3 + [True] * 5  # steps -3..-1 padding, trains 0..4
    assert first["obs"][3:8, 1].tolist() == [0, 1, 2, 3, 4] and np.array_equal(first["prev_state"], np.zeros((2, 8)))
    assert second["mask"].tolist() == [True] * 8  # burn-in 0..2, trains 3..7 (no front padding)
    assert second["obs"][:8, 1].tolist() == list(range(0, 8))
    assert third["obs"][:8, 1].tolist() == list(range(3, 11))  # burn-in 3..5, trains 6..10
    assert np.allclose(third["prev_state"], 0.03)


def test_overlapping_sequences_are_emitted_once_across_chunks():
    # steps [0, 12) in one chunk, then 8 more after 7 kept: the second chunk emits only what the first could not
    first = overlapping_sequences(0, 0, 12, False, 3, 3, 5)
    second = overlapping_sequences(5, 7, 15, False, 3, 3, 5)
    assert first == [(0, 5, 3), (0, 8, 0), (3, 11, 0)]
    assert second == [(6, 14, 0), (9, 17, 0), (12, 20, 0)]
    # the episode's last chunk also emits the sequences its end cuts short (padded at the end)
    assert overlapping_sequences(5, 7, 14, True, 3, 3, 5) == [(6, 14, 0), (9, 17, 0), (12, 19, 0), (15, 19, 0)]


def test_front_padding_leaves_the_burn_in_state_loss_and_priority_unchanged():
    policy = R2D2Policy(dict(model=MODEL, burnin_step=3, learn_unroll_len=5, replay_period=3, nstep=2, priority=True,
                             priority_IS_weight=False, learn=dict(learning_rate=1e-12)))
    seqs = policy.collect_mode.get_train_sample(episode(0, 12, terminated=False))  # truncated: next_obs counts
    assert any(not s["mask"][0] for s in seqs) and any(not s["mask"][-1] for s in seqs)  # front and end padding
    out = policy.learn_mode.forward(seqs)
    noisy = [dict(s) for s in seqs]
    rng = np.random.default_rng(0)
    for s in noisy:  # garbage in every padded slot must change nothing
        pad = ~s["mask"]
        last = int(np.flatnonzero(s["mask"])[-1])
        obs_pad = np.append(pad, False)
        obs_pad[last + 1] = False  # the slot after the last real step is its next_obs, the bootstrap state
        s["obs"] = s["obs"].copy()
        s["obs"][obs_pad] = rng.standard_normal((int(obs_pad.sum()), 4))
        s["action"] = np.where(pad, 1 - s["action"], s["action"])
        s["reward"] = np.where(pad, 7.0, s["reward"]).astype(np.float32)
    again = policy.learn_mode.forward(noisy)
    assert np.allclose(out["priority"], again["priority"], atol=1e-6)
    assert out["total_loss"] == pytest.approx(again["total_loss"], rel=1e-5)


def test_burn_in_skips_front_padding_and_matches_the_unpadded_unroll():
    torch.manual_seed(0)
    model = r2d2().learn_mode.get_attribute("model")
    obs = torch.randn(2, 4, 4)
    state = torch.randn(2, 2, 8)
    valid = torch.tensor([[False, False, True, True], [True, True, True, True]])
    with torch.no_grad():
        got = _burn_in(model, obs, state, valid)
        row0 = model(obs[:1, 2:], state[:1])["next_state"]
        row1 = model(obs[1:], state[1:])["next_state"]
        all_valid = _burn_in(model, obs, state, torch.ones(2, 4, dtype=torch.bool))
    assert torch.allclose(got[0], row0[0], atol=1e-6) and torch.allclose(got[1], row1[0], atol=1e-6)
    assert torch.allclose(all_valid, model(obs, state)["next_state"], atol=1e-6)


def test_priority_mixes_max_and_mean_over_the_trained_part_only():
    cfg = dict(model=MODEL, burnin_step=3, learn_unroll_len=5, replay_period=3, nstep=2, priority=True,
               priority_IS_weight=False, learn=dict(learning_rate=1e-12))
    seqs = R2D2Policy(cfg).collect_mode.get_train_sample(episode(0, 9))
    torch.manual_seed(0)
    mixed = R2D2Policy({**cfg, "priority_eta": 0.9}).learn_mode.forward(seqs)["priority"]
    torch.manual_seed(0)
    hi = R2D2Policy({**cfg, "priority_eta": 1.0}).learn_mode.forward(seqs)["priority"]
    torch.manual_seed(0)
    lo = R2D2Policy({**cfg, "priority_eta": 0.0}).learn_mode.forward(seqs)["priority"]
    assert np.allclose(mixed, 0.9 * hi + 0.1 * lo, atol=1e-5) and (hi >= lo - 1e-6).all() and (lo > 0).all()


def test_a_replay_period_longer_than_the_trained_part_is_refused():
    with pytest.raises(ConfigError, match=r"policy\.replay_period: 6 is longer than policy\.learn_unroll_len 5"):
        r2d2(burnin=3, learn=5, period=6)


def test_the_same_episode_given_twice_gives_the_same_sequences():
    policy = r2d2(burnin=3, learn=5, period=3)
    ep = episode(0, 12)
    once, twice = policy.collect_mode.get_train_sample(ep), policy.collect_mode.get_train_sample(ep)
    assert len(once) == len(twice) == 4
    assert all(np.array_equal(a["obs"], b["obs"]) and np.array_equal(a["mask"], b["mask"]) for a, b in zip(once, twice))


def test_an_eval_only_policy_answers_the_nstep_attribute():
    policy = R2D2Policy(dict(model=MODEL, replay_period=4), enable_field=["eval"])
    assert policy.eval_mode.get_attribute("nstep") == 1


def test_a_chunk_that_does_not_repeat_the_previous_one_is_refused():
    policy = r2d2(burnin=3, learn=5, period=3)
    ep = episode(0, 30)
    policy.collect_mode.get_train_sample(ep[:12])
    with pytest.raises(ValueError, match=r"repeat the last 7 transitions of the previous chunk"):
        policy.collect_mode.get_train_sample(ep[10:20])  # only 2 kept


def test_the_collector_keeps_the_context_overlapping_sequences_need():
    assert r2d2(burnin=3, learn=5, period=3).collect_mode.get_attribute("nstep") == 8  # keeps 7
    assert r2d2(burnin=3, learn=5, period=None).collect_mode.get_attribute("nstep") == 1  # DI-engine's split


def test_with_the_real_collector_every_step_of_a_finished_episode_is_trained(in_tmp_dir):
    policy = r2d2(burnin=4, learn=16, period=8, collect=dict(n_sample=8))
    seen: list[dict] = []
    mode = policy.collect_mode

    def process(obs, out, timestep):
        transition = mode.process_transition(obs, out, timestep)
        seen.append(transition)
        return transition

    view = PolicyCollectMode(mode.forward, process, mode.get_train_sample, mode.reset, mode.get_attribute,
                             mode.set_attribute, mode.state_dict, mode.load_state_dict)
    env = create_env_manager(dict(type="base"), [lambda: CartPoleEnv({})])
    env.seed(0)
    collector = SampleSerialCollector(SampleSerialCollector.default_config(), env, view)
    try:
        # drop_extra=False: every sequence the flushed chunks gave (drop_extra cuts the list at n_sample)
        samples = collector.collect(n_sample=60, train_iter=0, drop_extra=False, policy_kwargs={"eps": 1.0})
    finally:
        collector.close()
    trained = [seq["obs"][i] for seq in samples for i in range(4, 20) if seq["mask"][i]]
    ends = [i for i, t in enumerate(seen) if t["done"] or t.get("truncated", False)]
    assert len(ends) >= 3  # random actions end CartPole episodes after ~20 steps
    finished = seen[:ends[-1] + 1]  # one env: the transitions of every episode that ended in the call
    trained_bytes = {o.tobytes() for o in trained}
    assert all(t["obs"].tobytes() in trained_bytes for t in finished)
    assert [t["episode_step"] for t in finished[:ends[0] + 1]] == list(range(ends[0] + 1))
