"""PPO and A2C policies: acting, transitions (time-limit truncation bootstraps), the update, and their config errors."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from ding.envs import BaseEnvTimestep
from ding.policy import A2CPolicy, PPOPolicy, create_policy
from ding.policy.actor_critic import index_batch, minibatch_indices
from ding.utils import ConfigError

CARTPOLE_MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16])
PENDULUM_MODEL = dict(obs_shape=3, action_shape=1, encoder_hidden_size_list=[32, 32], actor_head_layer_num=0,
                      critic_head_layer_num=0, bound_type="tanh")


def ppo(**cfg):
    base = dict(type="ppo", model=dict(CARTPOLE_MODEL), collect=dict(n_sample=64, discount_factor=0.9))
    base.update(cfg)
    return create_policy(base)


def _timestep(obs, reward, done, truncated=False):
    return BaseEnvTimestep(np.asarray(obs, np.float32), np.array([reward], np.float32), done,
                           {"truncated": truncated})


def _episode(policy, n, truncated, seed=0):
    """n transitions of one env whose last step ends the episode (by a time limit if ``truncated``)."""
    rng = np.random.default_rng(seed)
    obs = [rng.standard_normal(4).astype(np.float32) for _ in range(n + 1)]
    out = policy.collect_mode.forward({0: obs[0]})
    chunk = []
    for t in range(n):
        out = policy.collect_mode.forward({0: obs[t]})
        ts = _timestep(obs[t + 1], 1.0, t == n - 1, truncated and t == n - 1)
        chunk.append(policy.collect_mode.process_transition(obs[t], out[0], ts))
    return policy.collect_mode.get_train_sample(chunk), obs


def test_collect_samples_actions_and_keeps_logit_and_value():
    np.random.seed(0)
    policy = ppo()
    obs = {i: np.full(4, i / 10, np.float32) for i in range(3)}
    out = policy.collect_mode.forward(obs)
    assert sorted(out) == [0, 1, 2]
    assert out[0]["action"].dtype == np.int64 and out[0]["logit"].shape == (2,) and np.ndim(out[0]["value"]) == 0
    np.random.seed(0)
    assert [o["action"] for o in policy.collect_mode.forward(obs).values()] == [o["action"] for o in out.values()]
    greedy = policy.eval_mode.forward(obs)
    assert all(greedy[i]["action"] == np.argmax(out[i]["logit"]) for i in obs)


def test_time_limit_truncation_bootstraps_from_the_final_observation():
    """A truncated episode's last sample has done=False, and its advantage is r + gamma * V(final obs) - V(obs);
    a terminated one has done=True and r - V(obs)."""
    policy = ppo()
    gamma, critic = 0.9, lambda o: policy._model(torch.as_tensor(o)[None], mode="compute_critic")["value"].item()
    for truncated in (True, False):
        samples, obs = _episode(policy, 3, truncated)
        assert [s["done"] for s in samples] == [False, False, not truncated]
        assert [s["traj_flag"] for s in samples] == [False, False, True]
        _, adv, _ = policy._gae_targets(policy._collate(samples, "test"))
        bootstrap = gamma * critic(obs[3]) if truncated else 0.0
        assert adv[-1].item() == pytest.approx(1.0 + bootstrap - critic(obs[2]), abs=1e-5)


def test_learn_returns_one_log_dict_per_minibatch_and_changes_the_model():
    policy = ppo(learn=dict(epoch_per_collect=2, batch_size=16))
    samples = []
    for seed in range(8):
        samples += _episode(policy, 8, truncated=seed % 2 == 0, seed=seed)[0]
    before = [p.detach().clone() for p in policy._model.parameters()]
    infos = policy.learn_mode.forward(samples)
    assert len(infos) == 2 * (64 // 16)
    assert {"total_loss", "policy_loss", "value_loss", "entropy_loss", "approx_kl", "clipfrac", "grad_norm"} <= set(
        infos[0])
    assert any(not torch.equal(a, b) for a, b in zip(before, policy._model.parameters()))
    assert all(i["grad_norm"] >= 0 for i in infos)


@pytest.mark.parametrize("policy_type", ["ppo", "a2c"])
def test_continuous_policy_moves_its_mean_toward_positive_advantages(policy_type):
    """A one-step bandit: reward +1 for a positive action, -1 otherwise; the Gaussian's mean must go up."""
    torch.manual_seed(0)
    np.random.seed(0)
    policy = create_policy(dict(type=policy_type, action_space="continuous", model=dict(PENDULUM_MODEL),
                                learn=dict(batch_size=64, learning_rate=3e-3), collect=dict(n_sample=256)))
    obs = {i: np.random.randn(3).astype(np.float32) for i in range(256)}
    batch = torch.as_tensor(np.stack(list(obs.values())))

    def mean_mu():
        return policy._model(batch, mode="compute_actor")["logit"]["mu"].mean().item()

    before = mean_mu()
    for _ in range(5):
        out = policy.collect_mode.forward(obs)
        samples = []
        for i, o in obs.items():
            ts = _timestep(o, 1.0 if out[i]["action"][0] > 0 else -1.0, True)
            samples += policy.collect_mode.get_train_sample([policy.collect_mode.process_transition(o, out[i], ts)])
        policy.learn_mode.forward(samples)
    assert mean_mu() > before + 0.1


def test_a2c_one_pass_one_step_per_minibatch():
    policy = create_policy(dict(type="a2c", model=dict(CARTPOLE_MODEL), learn=dict(batch_size=8)))
    samples = _episode(policy, 20, truncated=True)[0]
    assert len(policy.learn_mode.forward(samples)) == 3  # 20 samples: 8, 8, and a short last one of 4


@pytest.mark.parametrize(("n", "batch_size"), [(20, 8), (64, 16), (5, 8), (1, 4), (17, 1), (9, 9)])
def test_minibatches_hold_every_sample_once_with_a_short_last_one(n, batch_size):
    torch.manual_seed(n)
    minibatches = minibatch_indices(n, batch_size)
    assert sorted(torch.cat(minibatches).tolist()) == list(range(n))
    full, rest = divmod(n, batch_size)
    assert [len(m) for m in minibatches] == [batch_size] * full + ([rest] if rest else [])


@pytest.mark.parametrize("policy_type", ["ppo", "a2c"])
def test_every_sample_is_trained_exactly_once_per_epoch(policy_type, monkeypatch):
    """20 samples in minibatches of 8 over 3 epochs (A2C: 1 pass): each epoch's updates see each sample once."""
    module = importlib.import_module(f"ding.policy.{policy_type}")
    seen: list[list[int]] = []

    def recording_index_batch(batch, idx):
        seen.append(idx.tolist())
        return index_batch(batch, idx)

    monkeypatch.setattr(module, "index_batch", recording_index_batch)
    learn = dict(batch_size=8, epoch_per_collect=3) if policy_type == "ppo" else dict(batch_size=8)
    policy = create_policy(dict(type=policy_type, model=dict(CARTPOLE_MODEL), learn=learn))
    samples = _episode(policy, 20, truncated=True)[0]
    infos = policy.learn_mode.forward(samples)
    epochs = 3 if policy_type == "ppo" else 1
    assert len(infos) == len(seen) == 3 * epochs  # 8, 8 and 4 per epoch
    for e in range(epochs):
        used = [i for idx in seen[3 * e:3 * e + 3] for i in idx]
        assert sorted(used) == list(range(20)), f"epoch {e}: samples used {sorted(used)}"


def test_value_normalisation_and_lr_schedule_travel_in_the_state_dict():
    policy = ppo(learn=dict(lr_scheduler=dict(epoch_num=10, min_lr_lambda=0.1), epoch_per_collect=1))
    samples = _episode(policy, 30, truncated=True)[0]
    policy.learn_mode.forward(samples)
    state = policy.learn_mode.state_dict()
    assert state["value_norm"]["count"] > 30 - 1 and state["lr_scheduler"]["last_epoch"] == 1
    other = ppo(learn=dict(lr_scheduler=dict(epoch_num=10, min_lr_lambda=0.1), epoch_per_collect=1))
    other.learn_mode.load_state_dict(state)
    assert other._value_norm.state_dict() == policy._value_norm.state_dict()
    assert other._optimizer.param_groups[0]["lr"] == pytest.approx(policy._optimizer.param_groups[0]["lr"])


def test_config_errors_name_the_key_and_the_fix():
    with pytest.raises(ConfigError, match=r"policy\.collect\.unroll_len: PPOPolicy trains on single transitions"):
        ppo(collect=dict(unroll_len=4, n_sample=64))
    with pytest.raises(ConfigError, match=r"policy\.model\.action_space is 'continuous' but policy\.action_space is "
                                          r"'discrete'"):
        ppo(model=dict(CARTPOLE_MODEL, action_space="continuous"))
    with pytest.raises(ConfigError, match=r"policy\.action_space: 'hybrid' is not one of"):
        ppo(action_space="hybrid")
    # multi_agent=True builds MAPPO, whose MAVAC model names the single-agent keys it does not take
    with pytest.raises(ConfigError, match=r"policy\.model\.obs_shape: unknown argument of model .*MAVAC"):
        ppo(multi_agent=True)
    with pytest.raises(ConfigError, match=r"policy\.learn\.update_per_collect: A2C trains once"):
        create_policy(dict(type="a2c", model=dict(CARTPOLE_MODEL), learn=dict(update_per_collect=3)))
    with pytest.raises(ConfigError, match=r"policy\.learn\.lr_scheduler: expected None or dict\(epoch_num="):
        ppo(learn=dict(lr_scheduler=dict(epochs=3)))


def test_learn_given_episodes_or_foreign_samples_says_what_to_do():
    policy = ppo()
    samples = _episode(policy, 3, truncated=False)[0]
    with pytest.raises(ValueError, match="got a list of episodes.*get_train_sample=True"):
        policy.learn_mode.forward([samples])
    with pytest.raises(ValueError, match=r"samples lack key\(s\) \['logit', 'value', 'traj_flag'\]"):
        policy.learn_mode.forward([{k: s[k] for k in ("obs", "next_obs", "action", "reward", "done")}
                                   for s in samples])


def test_registered_under_di_engine_names():
    from ding.utils import POLICY_REGISTRY

    assert POLICY_REGISTRY.get("ppo") is PPOPolicy and POLICY_REGISTRY.get("ppo_command") is PPOPolicy
    assert POLICY_REGISTRY.get("a2c") is A2CPolicy and POLICY_REGISTRY.get("a2c_command") is A2CPolicy
    assert PPOPolicy.default_config().on_policy is True and A2CPolicy.default_config().on_policy is True


def test_gradient_clipping_by_norm_and_by_value():
    policy = ppo()
    params = [p for p in policy._model.parameters()]

    def backward():
        policy._optimizer.zero_grad()
        policy._model(torch.ones(8, 4), mode="compute_actor_critic")["value"].pow(2).sum().mul(100).backward()

    backward()
    before = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params if p.grad is not None]))
    assert policy._clip_grad("clip_norm", 0.5) == pytest.approx(before.item(), rel=1e-5)
    after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params if p.grad is not None]))
    assert before > 0.5 and after.item() == pytest.approx(0.5, rel=1e-4)
    backward()
    assert policy._clip_grad("clip_value", 0.01) is None
    assert max(p.grad.abs().max().item() for p in params if p.grad is not None) <= 0.01
