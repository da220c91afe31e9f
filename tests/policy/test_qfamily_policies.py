"""C51, Rainbow and R2D2 policies: their mode views, sequences, priorities, noise, hidden states and errors."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from ding.envs import create_env_manager
from ding.envs.env.base_env import BaseEnvTimestep
from ding.model import NoisyLinear
from ding.policy import C51Policy, R2D2Policy, RainbowPolicy, check_policy_fits_env
from ding.policy.r2d2 import _continuous_length
from ding.utils import ConfigError
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv
from dizoo.classic_control.pendulum.envs.pendulum_env import PendulumEnv

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 8])


def obs_dict(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return {env_id: rng.standard_normal(4).astype(np.float32) for env_id in range(n)}


def transitions(policy, n, done_at=None, seed=0):
    """``n`` transitions of env 0 collected through the policy's collect view (the episode ends at ``done_at``)."""
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal(4).astype(np.float32)
    out = []
    for t in range(n):
        output = policy.collect_mode.forward({0: obs}, eps=0.5)[0]
        next_obs = rng.standard_normal(4).astype(np.float32)
        done = t == done_at
        ts = BaseEnvTimestep(next_obs, np.array([float(t)], np.float32), done, {"truncated": False})
        out.append(policy.collect_mode.process_transition(obs, output, ts))
        obs = next_obs
    return out


# ---------------------------------------------------------------------------------------------------- C51 / Rainbow
@pytest.mark.parametrize("cls", [C51Policy, RainbowPolicy])
def test_distributional_learn_returns_one_priority_per_sample(cls):
    torch.manual_seed(0)
    policy = cls(dict(model=dict(MODEL, v_min=0, v_max=10, n_atom=11), nstep=1, priority=True,
                      priority_IS_weight=True))
    rng = np.random.default_rng(0)
    batch = [{"obs": rng.standard_normal(4).astype(np.float32), "next_obs": rng.standard_normal(4).astype(np.float32),
              "action": np.int64(i % 2), "reward": np.array([1.0], np.float32), "done": i % 3 == 0,
              "IS": np.float32(1.0)} for i in range(16)]
    before = [p.detach().clone() for p in policy.learn_mode.get_attribute("model").parameters()]
    out = policy.learn_mode.forward(batch)
    assert out["priority"].shape == (16,) and np.isfinite(out["priority"]).all() and (out["priority"] >= 0).all()
    assert set(policy.learn_mode.monitor_vars()) <= set(out)
    after = list(policy.learn_mode.get_attribute("model").parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after))


@pytest.mark.parametrize("cls", [C51Policy, RainbowPolicy])
@pytest.mark.parametrize(("v_min", "v_max"), [(0.1, 0.3), (-5.0, 0.3)])
def test_distributional_learns_on_supports_that_are_not_integer_ranges(cls, v_min, v_max):
    """Targets on v_max (reward >= (1 - gamma) v_max) once made the projection index past the last atom."""
    torch.manual_seed(0)
    policy = cls(dict(model=dict(MODEL, v_min=v_min, v_max=v_max, n_atom=51), nstep=1, discount_factor=0.99))
    rng = np.random.default_rng(0)
    rewards = np.concatenate([[v_max, (1 - 0.99) * v_max, 1.0, v_min], rng.uniform(-6.0, 1.0, 12)])
    batch = [{"obs": rng.standard_normal(4).astype(np.float32), "next_obs": rng.standard_normal(4).astype(np.float32),
              "action": np.int64(i % 2), "reward": np.array([r], np.float32), "done": i % 3 == 0,
              "IS": np.float32(1.0)} for i, r in enumerate(rewards)]
    for _ in range(2):
        out = policy.learn_mode.forward(batch)
        assert np.isfinite(out["total_loss"]), out


def test_c51_default_model_has_the_configured_support_and_no_noise():
    policy = C51Policy(dict(model=dict(MODEL, v_min=-5, v_max=5, n_atom=21)))
    model = policy.learn_mode.get_attribute("model")
    assert (model.v_min, model.v_max, model.n_atom) == (-5.0, 5.0, 21)
    assert not any(isinstance(m, NoisyLinear) for m in model.modules())


def test_c51_refuses_a_model_without_a_support():
    from ding.model import DQN

    with pytest.raises(ConfigError, match=r"C51Policy needs a distributional model .* DQN lacks"):
        C51Policy(dict(model=MODEL), model=DQN(**MODEL))


def test_rainbow_explores_by_noise_not_epsilon():
    torch.manual_seed(0)
    policy = RainbowPolicy(dict(model=MODEL))
    obs = obs_dict(64)
    first = policy.collect_mode.forward(obs, eps=1.0)
    # eps=1 would make every action random; with noisy nets the action is the argmax of this step's noisy Q
    assert all(v["action"] == v["logit"].argmax() for v in first.values())
    second = policy.collect_mode.forward(obs, eps=1.0)
    assert not np.array_equal(first[0]["logit"], second[0]["logit"])  # fresh noise at every forward


def test_rainbow_evaluates_the_noise_free_network():
    torch.manual_seed(0)
    policy = RainbowPolicy(dict(model=MODEL))
    obs = obs_dict(4)
    policy.collect_mode.forward(obs, eps=0.0)
    a, b = policy.eval_mode.forward(obs), policy.eval_mode.forward(obs)
    assert all(np.array_equal(a[i]["logit"], b[i]["logit"]) for i in obs)
    # and collecting switches the noise back on
    c, d = policy.collect_mode.forward(obs, eps=0.0), policy.collect_mode.forward(obs, eps=0.0)
    assert not np.array_equal(c[0]["logit"], d[0]["logit"])


def test_rainbow_without_noise_is_epsilon_greedy():
    np.random.seed(0)
    policy = RainbowPolicy(dict(model=dict(MODEL, noise=False)))
    out = policy.collect_mode.forward(obs_dict(64), eps=1.0)
    assert any(v["action"] != v["logit"].argmax() for v in out.values())


# ---------------------------------------------------------------------------------------------------- R2D2
def r2d2(**overrides):
    torch.manual_seed(0)
    cfg = dict(model=MODEL, burnin_step=1, learn_unroll_len=2, nstep=2, priority=True, priority_IS_weight=False)
    cfg.update(overrides)
    return R2D2Policy(cfg)


def test_r2d2_collect_keeps_one_lstm_state_per_env_and_reset_forgets_it():
    policy = r2d2()
    obs = obs_dict(2)
    first = policy.collect_mode.forward(obs, eps=0.0)
    assert all(np.array_equal(v["prev_state"], np.zeros((2, 8), np.float32)) for v in first.values())
    second = policy.collect_mode.forward(obs, eps=0.0)
    assert not np.array_equal(second[0]["prev_state"], first[0]["prev_state"])
    # the state the second step started from is what the model returned after the first step
    model = policy.learn_mode.get_attribute("model")
    with torch.no_grad():
        expected = model(torch.from_numpy(obs[0]).unsqueeze(0))["next_state"][0].numpy()
    assert np.allclose(second[0]["prev_state"], expected, atol=1e-6)
    policy.collect_mode.reset([0])
    third = policy.collect_mode.forward(obs, eps=0.0)
    assert np.array_equal(third[0]["prev_state"], np.zeros((2, 8), np.float32))
    assert not np.array_equal(third[1]["prev_state"], np.zeros((2, 8), np.float32))


def test_r2d2_cuts_a_chunk_into_padded_sequences_with_their_start_state():
    policy = r2d2()  # sequences of 1 + 2 = 3 steps
    chunk = transitions(policy, 5, done_at=4)
    seqs = policy.collect_mode.get_train_sample(chunk)
    assert len(seqs) == 2
    a, b = seqs
    assert a["mask"].tolist() == [True, True, True] and b["mask"].tolist() == [True, True, False]
    assert a["obs"].shape == (4, 4)  # 3 steps + the next_obs of the last one
    assert np.array_equal(a["obs"][:3], np.stack([t["obs"] for t in chunk[:3]]))
    assert np.array_equal(a["obs"][3], chunk[2]["next_obs"]) and np.array_equal(b["obs"][2], chunk[4]["next_obs"])
    assert b["reward"].tolist() == [3.0, 4.0, 0.0] and b["done"].tolist() == [False, True, False]
    assert np.array_equal(b["prev_state"], chunk[3]["prev_state"])
    assert policy.collect_mode.get_attribute("nstep") == 1  # collectors keep nothing between chunks
    assert policy.collect_mode.get_attribute("cfg").collect.unroll_len == 3  # the collector sizes chunks by it


def test_r2d2_learns_on_sequences_and_gives_one_priority_per_sequence():
    policy = r2d2()
    seqs = policy.collect_mode.get_train_sample(transitions(policy, 12, done_at=11))
    before = [p.detach().clone() for p in policy.learn_mode.get_attribute("model").parameters()]
    out = policy.learn_mode.forward(seqs)
    assert out["priority"].shape == (len(seqs),) and (out["priority"] >= 0).all()
    after = list(policy.learn_mode.get_attribute("model").parameters())
    assert any(not torch.equal(x, y) for x, y in zip(before, after))


def test_r2d2_priority_mixes_max_and_mean_td_error():
    policy = r2d2(priority_eta=0.9, learn=dict(learning_rate=1e-12))
    seqs = policy.collect_mode.get_train_sample(transitions(policy, 6))
    out = policy.learn_mode.forward(seqs)
    # eta=0 and eta=1 bracket it: the same update with the mean only and the max only
    lo = r2d2(priority_eta=0.0, learn=dict(learning_rate=1e-12)).learn_mode.forward(seqs)["priority"]
    hi = r2d2(priority_eta=1.0, learn=dict(learning_rate=1e-12)).learn_mode.forward(seqs)["priority"]
    assert np.allclose(out["priority"], 0.9 * hi + 0.1 * lo, atol=1e-5)
    assert (hi >= lo - 1e-6).all()


def test_r2d2_learns_from_sequence_buffer_windows():
    policy = r2d2(other=dict(replay_buffer=dict(type="sequence", sequence_len=4)))
    chunk = policy.collect_mode.get_train_sample(transitions(policy, 6))
    assert len(chunk) == 6 and chunk[0]["chunk_start"] and not chunk[1]["chunk_start"]
    out = policy.learn_mode.forward([chunk[0:4], chunk[2:6]])
    assert out["priority"].shape == (2,)


def test_sequence_buffer_windows_stop_at_a_chunk_start_or_an_episode_end():
    w = [dict(done=False, chunk_start=True), dict(done=False), dict(done=False, chunk_start=True), dict(done=False)]
    assert _continuous_length(w) == 2
    assert _continuous_length([dict(done=False), dict(done=True), dict(done=False)]) == 2
    assert _continuous_length([dict(done=False, truncated=True), dict(done=False)]) == 1
    assert _continuous_length([dict(done=False)] * 3) == 3


def test_r2d2_unroll_len_longer_than_the_sequence_buffer_sequences_is_refused():
    with pytest.raises(ConfigError, match=r"policy\.collect\.unroll_len: 42 \(burnin_step 2 \+ learn_unroll_len 40\) "
                                          r"is longer than the sequence buffer's sequences \(policy\.other\."
                                          r"replay_buffer\.sequence_len=20\); set sequence_len=42"):
        R2D2Policy(dict(model=MODEL, burnin_step=2, learn_unroll_len=40,
                        other=dict(replay_buffer=dict(type="sequence", sequence_len=20))))
    with pytest.raises(ConfigError, match=r"sequence_len=None"):
        R2D2Policy(dict(model=MODEL, other=dict(replay_buffer=dict(type="sequence"))))


def test_r2d2_unroll_len_must_be_burnin_plus_learn_unroll_len():
    R2D2Policy(dict(model=MODEL, burnin_step=2, learn_unroll_len=40, collect=dict(unroll_len=42)))
    with pytest.raises(ConfigError, match=r"policy\.collect\.unroll_len: 30 does not match burnin_step \+ "
                                          r"learn_unroll_len = 2 \+ 40 = 42"):
        R2D2Policy(dict(model=MODEL, burnin_step=2, learn_unroll_len=40, collect=dict(unroll_len=30)))


def test_r2d2_missing_importance_weights_say_where_they_come_from():
    policy = r2d2(priority_IS_weight=True)
    seqs = policy.collect_mode.get_train_sample(transitions(policy, 3))
    with pytest.raises(ValueError, match=r"lack key\(s\) \['IS'\].*'advanced' buffer"):
        policy.learn_mode.forward(seqs)


def test_r2d2_state_dict_carries_the_collect_states():
    policy = r2d2()
    policy.collect_mode.forward(obs_dict(3), eps=0.0)
    state = policy.learn_mode.state_dict()
    assert sorted(state["collect_state"]) == [0, 1, 2]
    other = r2d2()
    other.learn_mode.load_state_dict({k: v for k, v in state.items()})
    a = policy.collect_mode.forward(obs_dict(3, seed=1), eps=0.0)
    b = other.collect_mode.forward(obs_dict(3, seed=1), eps=0.0)
    assert all(np.array_equal(a[i]["prev_state"], b[i]["prev_state"]) for i in range(3))


# ---------------------------------------------------------------------------------------------------- env checks
def _manager(env_cls):
    return create_env_manager(dict(type="base"), [partial(env_cls, {})])


@pytest.mark.parametrize("cls,name", [(C51Policy, "c51"), (RainbowPolicy, "rainbow"), (R2D2Policy, "r2d2")])
def test_a_continuous_action_space_is_refused(cls, name):
    policy = cls(dict(type=name, model=dict(obs_shape=3, action_shape=1)), enable_field=["eval"])
    with pytest.raises(ConfigError, match=rf"policy\.type: {cls.__name__} \('{name}'\) needs a Discrete action space, "
                                          r"but env 'pendulum' has Box"):
        check_policy_fits_env(policy, _manager(PendulumEnv), "pendulum")


@pytest.mark.parametrize("cls,name", [(C51Policy, "c51"), (RainbowPolicy, "rainbow"), (R2D2Policy, "r2d2")])
def test_an_action_shape_not_matching_the_env_is_refused(cls, name):
    policy = cls(dict(type=name, model=dict(MODEL, action_shape=3)), enable_field=["eval"])
    expected = (r"policy\.model\.action_shape: 3 does not match the action space of env 'cartpole', Discrete\(2\) "
                r"\(expects 2\); set policy\.model\.action_shape=2")
    with pytest.raises(ConfigError, match=expected):
        check_policy_fits_env(policy, _manager(CartPoleEnv), "cartpole")
