"""SACPolicy: the update (temperature, twin-Q target), collect/eval actions, transitions, state dicts, errors."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from ding.envs import BaseEnvTimestep
from ding.policy import SACPolicy, create_policy
from ding.utils import POLICY_REGISTRY, ConfigError

MODEL = dict(obs_shape=3, action_shape=1, actor_head_hidden_size=16, critic_head_hidden_size=16)


def sac(**learn):
    torch.manual_seed(0)
    return SACPolicy(dict(type="sac", model=dict(MODEL), learn=learn))


def batch(n=32, seed=0, done=False):
    rng = np.random.default_rng(seed)
    return [{"obs": rng.standard_normal(3).astype(np.float32), "next_obs": rng.standard_normal(3).astype(np.float32),
             "action": rng.uniform(-1, 1, 1).astype(np.float32),
             "reward": np.array([rng.standard_normal()], np.float32),
             "done": done, "truncated": False} for _ in range(n)]


def test_registered_under_di_engine_names():
    assert POLICY_REGISTRY.get("sac") is SACPolicy and POLICY_REGISTRY.get("sac_command") is SACPolicy
    assert SACPolicy.default_config().model.twin_critic is True


def test_temperature_moves_one_adam_step_towards_the_target_entropy():
    """Adam's first step moves log(alpha) by lr against the gradient's sign: with a target entropy far above the
    policy's, alpha must rise by exactly exp(lr); far below, fall by exp(-lr)."""
    for target_entropy, sign in ((50.0, 1.0), (-50.0, -1.0)):
        policy = sac(alpha=0.2, learning_rate_alpha=0.01, target_entropy=target_entropy)
        policy.learn_mode.forward(batch())
        log_alpha = policy.learn_mode.state_dict()["log_alpha"].item()
        assert log_alpha == pytest.approx(math.log(0.2) + sign * 0.01, abs=1e-6)


def test_fixed_alpha_stays_and_default_target_entropy_is_minus_action_dims():
    policy = sac(auto_alpha=False, alpha=0.05)
    out = policy.learn_mode.forward(batch())
    assert out["alpha"] == pytest.approx(0.05) and "optimizer_alpha" not in policy.learn_mode.state_dict()
    wide = SACPolicy(dict(type="sac", model=dict(MODEL, action_shape=3)))
    assert wide._get_attribute("target_entropy") == -3.0


def test_critic_regresses_on_the_min_of_the_target_twins_with_the_entropy_term():
    """Recompute one update's critic loss by hand: at the start the target networks equal the online ones, and the
    first random draw of the update is the next action's noise."""
    policy = sac(alpha=0.5, auto_alpha=False)
    data = batch(8)
    net = copy.deepcopy(policy._get_attribute("model"))
    torch.manual_seed(3)
    out = policy.learn_mode.forward(data)
    torch.manual_seed(3)
    obs, next_obs, action = (torch.tensor(np.stack([d[k] for d in data])) for k in ("obs", "next_obs", "action"))
    reward = torch.tensor([d["reward"][0] for d in data])
    with torch.no_grad():
        mu, sigma = net.compute_actor(next_obs)["logit"]
        eps = torch.randn_like(mu)
        u = mu + sigma * eps
        log_prob = (-0.5 * eps**2 - sigma.log() - 0.5 * math.log(2 * math.pi)
                    - torch.log(1 - torch.tanh(u) ** 2)).sum(-1)
        q1_next, q2_next = net.compute_critic({"obs": next_obs, "action": torch.tanh(u)})["q_value"]
        target = reward + 0.99 * (torch.minimum(q1_next, q2_next) - 0.5 * log_prob)
        q1, q2 = net.compute_critic({"obs": obs, "action": action})["q_value"]
        expected = ((q1 - target) ** 2).mean() + ((q2 - target) ** 2).mean()
    assert out["critic_loss"] == pytest.approx(expected.item(), rel=1e-4)


def test_one_update_changes_actor_critics_and_soft_target():
    policy = sac()
    before = copy.deepcopy(policy.learn_mode.state_dict())
    out = policy.learn_mode.forward(batch())
    after = policy.learn_mode.state_dict()
    assert set(out) >= set(policy.learn_mode.monitor_vars())
    for part in ("actor", "critic"):
        key = next(k for k in before["model"] if k.startswith(part))
        assert not torch.equal(before["model"][key], after["model"][key])
    key = next(k for k in before["target_model"] if k.startswith("critic"))
    moved = after["target_model"][key] - before["target_model"][key]
    online_move = after["model"][key] - before["target_model"][key]
    assert torch.allclose(moved, 0.005 * online_move, atol=1e-6)  # Polyak step with theta = 0.005


def test_collect_samples_eval_is_deterministic_tanh_mu():
    policy = sac()
    obs = {i: np.full(3, 0.1 * i, np.float32) for i in range(4)}
    torch.manual_seed(0)
    first = policy.collect_mode.forward(obs)
    second = policy.collect_mode.forward(obs)
    assert set(first) == set(obs) and first[0]["action"].shape == (1,) and first[0]["action"].dtype == np.float32
    assert not np.allclose(first[0]["action"], second[0]["action"])
    assert all(-1 < out["action"][0] < 1 for out in first.values())
    eval_a, eval_b = policy.eval_mode.forward(obs), policy.eval_mode.forward(obs)
    assert all(np.array_equal(eval_a[i]["action"], eval_b[i]["action"]) for i in obs)
    mu = policy._get_attribute("model").compute_actor(torch.tensor(obs[2])[None])["logit"][0]
    assert eval_a[2]["action"] == pytest.approx(torch.tanh(mu).detach().numpy()[0], abs=1e-6)


def test_truncation_bootstraps_termination_does_not():
    policy = sac()
    obs = np.zeros(3, np.float32)
    out = {"action": np.zeros(1, np.float32)}
    cut = policy.collect_mode.process_transition(obs, out, BaseEnvTimestep(obs, np.array([-1.0], np.float32), True,
                                                                          {"truncated": True}))
    end = policy.collect_mode.process_transition(obs, out, BaseEnvTimestep(obs, np.array([-1.0], np.float32), True,
                                                                          {"truncated": False}))
    assert (cut["done"], cut["truncated"]) == (False, True) and (end["done"], end["truncated"]) == (True, False)


def test_nstep_samples_and_priorities():
    policy = SACPolicy(dict(type="sac", nstep=3, priority=True, model=dict(MODEL)))
    obs = np.zeros(3, np.float32)
    steps = [policy.collect_mode.process_transition(
        obs, {"action": np.zeros(1, np.float32)},
        BaseEnvTimestep(obs, np.array([1.0], np.float32), i == 4, {"truncated": i == 4})) for i in range(5)]
    samples = policy.collect_mode.get_train_sample(steps)
    assert len(samples) == 5 and samples[0]["reward"].tolist() == [1.0, 1.0, 1.0]
    assert samples[4]["value_gamma"] == pytest.approx(0.99)  # cut by the time limit after one step
    out = policy.learn_mode.forward(samples * 4)
    assert out["priority"].shape == (20,) and (out["priority"] >= 0).all()


def test_state_dict_round_trip_continues_bit_identically():
    a = sac()
    for seed in range(3):
        a.learn_mode.forward(batch(seed=seed))
    state = copy.deepcopy(a.learn_mode.state_dict())
    assert {"model", "target_model", "optimizer_q", "optimizer_policy", "optimizer_alpha", "log_alpha"} <= set(state)
    b = SACPolicy(dict(type="sac", model=dict(MODEL)))
    b.learn_mode.load_state_dict(state)
    torch.manual_seed(7)
    a.learn_mode.forward(batch(seed=9))
    torch.manual_seed(7)
    b.learn_mode.forward(batch(seed=9))
    sa, sb = a.learn_mode.state_dict(), b.learn_mode.state_dict()
    for part in ("model", "target_model"):
        assert all(torch.equal(sa[part][k], sb[part][k]) for k in sa[part])
    assert torch.equal(sa["log_alpha"], sb["log_alpha"])


def test_model_only_state_seeds_training():
    a = sac()
    b = sac(alpha=0.3)
    b.learn_mode.load_state_dict({"model": a.learn_mode.state_dict()["model"]})
    target = b.learn_mode.state_dict()["target_model"]
    assert all(torch.equal(target[k], v) for k, v in a.learn_mode.state_dict()["model"].items())
    assert b.learn_mode.state_dict()["log_alpha"].item() == pytest.approx(math.log(0.3))


@pytest.mark.parametrize("cfg,match", [
    (dict(model=dict(MODEL, action_space="regression")),
     r"policy\.model\.action_space: SACPolicy needs action_space='reparameterization', got 'regression'"),
    (dict(collect=dict(unroll_len=2)), r"policy\.collect\.unroll_len: SAC trains on single transitions"),
    (dict(nstep=3, multi_agent=True, model=dict(agent_obs_shape=3, global_obs_shape=4, action_shape=1)),
     r"policy\.nstep: multi-agent SAC trains on one-step targets"),
])
def test_config_errors_name_the_key_and_the_fix(cfg, match):
    cfg = dict(type="sac", model=dict(MODEL), **cfg) if "model" not in cfg else dict(type="sac", **cfg)
    with pytest.raises(ConfigError, match=match):
        create_policy(cfg)


def test_learn_errors_name_the_missing_keys():
    policy = sac()
    with pytest.raises(ValueError, match=r"SACPolicy learn_mode\.forward: expected a non-empty list"):
        policy.learn_mode.forward([])
    with pytest.raises(ValueError, match=r"samples lack key\(s\) \['next_obs'\]"):
        policy.learn_mode.forward([{k: v for k, v in d.items() if k != "next_obs"} for d in batch(4)])


def test_mode_switch_toggles_only_models_whose_layers_care():
    from ding.model import ContinuousQAC
    from ding.policy.qac_utils import ModeSwitch

    plain = ContinuousQAC(3, 1, action_space="reparameterization")
    ModeSwitch(plain)(False)
    assert plain.training  # no dropout / batch norm: left alone (and nothing walked)
    normed = ContinuousQAC(3, 1, action_space="reparameterization", norm_type="BN")
    switch = ModeSwitch(normed)
    switch(False)
    assert not normed.training and not any(m.training for m in normed.modules())
    switch(True)
    assert all(m.training for m in normed.modules())


def test_sac_with_batch_norm_evaluates_in_eval_mode_and_learns_in_train_mode():
    policy = SACPolicy(dict(type="sac", model=dict(MODEL, norm_type="BN")))
    model = policy._get_attribute("model")
    policy.eval_mode.forward({0: np.zeros(3, np.float32), 1: np.ones(3, np.float32)})
    assert not model.training
    policy.learn_mode.forward(batch())
    assert model.training
