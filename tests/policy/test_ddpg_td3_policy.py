"""DDPGPolicy and TD3Policy: delayed actor updates, target smoothing, exploration noise, state dicts, errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ding.policy import DDPGPolicy, TD3Policy, create_policy
from ding.utils import POLICY_REGISTRY, ConfigError

MODEL = dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16)


def make(cls, **learn):
    torch.manual_seed(0)
    return cls(dict(type=cls.config["type"], model=dict(MODEL), learn=learn))


def batch(n=32, seed=0):
    rng = np.random.default_rng(seed)
    return [{"obs": rng.standard_normal(3).astype(np.float32), "next_obs": rng.standard_normal(3).astype(np.float32),
             "action": rng.uniform(-1, 1, 2).astype(np.float32),
             "reward": np.array([rng.standard_normal()], np.float32),
             "done": bool(rng.random() < 0.2), "truncated": False} for _ in range(n)]


def actor_param(policy, which="model"):
    state = policy.learn_mode.state_dict()[which]
    return state[next(k for k in state if k.startswith("actor"))].clone()


def critic_param(policy, which="model"):
    state = policy.learn_mode.state_dict()[which]
    return state[next(k for k in state if k.startswith("critic"))].clone()


def test_registered_under_di_engine_names_with_td3_defaults():
    assert POLICY_REGISTRY.get("ddpg") is DDPGPolicy and POLICY_REGISTRY.get("td3") is TD3Policy
    assert POLICY_REGISTRY.get("ddpg_command") is DDPGPolicy and POLICY_REGISTRY.get("td3_command") is TD3Policy
    ddpg, td3 = DDPGPolicy.default_config(), TD3Policy.default_config()
    assert (ddpg.model.twin_critic, ddpg.learn.actor_update_freq, ddpg.learn.noise) == (False, 1, False)
    assert (td3.model.twin_critic, td3.learn.actor_update_freq, td3.learn.noise) == (True, 2, True)


def test_td3_updates_the_actor_and_targets_every_second_step_only():
    policy = make(TD3Policy)
    actor0, target_critic0 = actor_param(policy), critic_param(policy, "target_model")
    out1 = policy.learn_mode.forward(batch(seed=1))
    assert "actor_loss" not in out1
    assert torch.equal(actor_param(policy), actor0)  # delayed: no actor step yet
    assert torch.equal(critic_param(policy, "target_model"), target_critic0)  # nor a target update
    assert not torch.equal(critic_param(policy), target_critic0)  # but the critics moved
    out2 = policy.learn_mode.forward(batch(seed=2))
    assert "actor_loss" in out2
    assert not torch.equal(actor_param(policy), actor0)
    assert not torch.equal(critic_param(policy, "target_model"), target_critic0)


def test_ddpg_updates_the_actor_every_step_with_one_critic():
    policy = make(DDPGPolicy)
    actor0 = actor_param(policy)
    out = policy.learn_mode.forward(batch())
    assert "actor_loss" in out and not torch.equal(actor_param(policy), actor0)
    assert len(policy._get_attribute("model").critic) == 1


def test_td3_target_uses_smoothed_target_action_and_min_of_twins(monkeypatch):
    """The critic loss of one TD3 step, rebuilt by hand with a known smoothing noise."""
    policy = make(TD3Policy, noise_sigma=0.2, noise_range=dict(min=-0.3, max=0.3), ignore_done=True)
    net = copy.deepcopy(policy._get_attribute("model"))
    data = batch(6)
    noise = torch.tensor([[3.0, -3.0], [0.5, 0.0], [-1.0, 1.0], [0.0, 0.0], [2.0, 2.0], [-0.2, 0.1]])
    monkeypatch.setattr(torch, "randn_like", lambda x: noise.clone())
    out = policy.learn_mode.forward(data)
    obs, next_obs, action = (torch.tensor(np.stack([d[k] for d in data])) for k in ("obs", "next_obs", "action"))
    reward = torch.tensor([d["reward"][0] for d in data])
    with torch.no_grad():
        next_action = (net.compute_actor(next_obs)["action"] + (0.2 * noise).clamp(-0.3, 0.3)).clamp(-1, 1)
        q1n, q2n = net.compute_critic({"obs": next_obs, "action": next_action})["q_value"]
        target = reward + 0.99 * torch.minimum(q1n, q2n)  # ignore_done: every sample bootstraps
        q1, q2 = net.compute_critic({"obs": obs, "action": action})["q_value"]
        expected = ((q1 - target) ** 2).mean() + ((q2 - target) ** 2).mean()
    assert out["critic_loss"] == pytest.approx(expected.item(), rel=1e-4)


def test_collect_noise_is_gaussian_and_clipped_eval_is_deterministic():
    policy = TD3Policy(dict(type="td3", model=dict(MODEL), collect=dict(noise_sigma=2.0)))
    obs = {i: np.full(3, 0.2 * i, np.float32) for i in range(64)}
    np.random.seed(0)
    collected = np.stack([o["action"] for o in policy.collect_mode.forward(obs).values()])
    assert collected.shape == (64, 2) and collected.dtype == np.float32
    assert collected.min() == -1.0 and collected.max() == 1.0  # sigma 2: many samples hit the bounds, clipped
    evaluated = np.stack([o["action"] for o in policy.eval_mode.forward(obs).values()])
    assert np.array_equal(evaluated, np.stack([o["action"] for o in policy.eval_mode.forward(obs).values()]))
    assert np.abs(evaluated).max() < 1
    quiet = TD3Policy(dict(type="td3", model=dict(MODEL), collect=dict(noise_sigma=0.0)))
    quiet.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    assert np.array_equal(np.stack([o["action"] for o in quiet.collect_mode.forward(obs).values()]), evaluated)


def test_state_dict_round_trip_continues_bit_identically_including_the_delay():
    a = make(TD3Policy)
    a.learn_mode.forward(batch(seed=1))  # odd step: the next one updates the actor
    state = copy.deepcopy(a.learn_mode.state_dict())
    assert {"model", "target_model", "optimizer_actor", "optimizer_critic", "learn_step"} <= set(state)
    b = TD3Policy(dict(type="td3", model=dict(MODEL)))
    b.learn_mode.load_state_dict(state)
    torch.manual_seed(5)
    out_a = a.learn_mode.forward(batch(seed=2))
    torch.manual_seed(5)
    out_b = b.learn_mode.forward(batch(seed=2))
    assert out_a == out_b and "actor_loss" in out_b
    sa, sb = a.learn_mode.state_dict(), b.learn_mode.state_dict()
    for part in ("model", "target_model"):
        assert all(torch.equal(sa[part][k], sb[part][k]) for k in sa[part])


@pytest.mark.parametrize("cfg,match", [
    (dict(model=dict(MODEL, action_space="reparameterization")),
     r"policy\.model\.action_space: DDPGPolicy needs action_space='regression', got 'reparameterization'"),
    (dict(model=dict(MODEL), reward_batch_norm=True), r"policy\.reward_batch_norm: ding's DDPGPolicy supports only "
                                                      r"False, got True; set policy\.reward_batch_norm=False"),
    (dict(model=dict(MODEL), action_space="hybrid"), r"policy\.action_space: ding's DDPGPolicy supports only "
                                                     r"'continuous'"),
    (dict(model=dict(MODEL), collect=dict(unroll_len=3)), r"policy\.collect\.unroll_len: DDPGPolicy trains on "
                                                          r"single transitions"),
    (dict(model=dict(MODEL), learn=dict(noise=True, noise_range=dict(min=0.1, max=0.5))),
     r"policy\.learn\.noise_range: min <= 0 <= max is needed"),
])
def test_config_errors_name_the_key_and_the_fix(cfg, match):
    with pytest.raises(ConfigError, match=match):
        create_policy(dict(type="ddpg", **cfg))
