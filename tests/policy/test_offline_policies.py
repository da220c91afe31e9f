"""The offline policies' learn steps: they run on a data set's ColumnBatch, learn what their losses say, and save
everything an exact resume needs."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ding.config import compile_config
from ding.policy import create_policy
from ding.utils.data import OfflineDataset


def _policy(ptype: str, model: dict, **learn):
    main = {"exp_name": "unused", "env": {}, "policy": {"cuda": False, "model": model, "learn": learn}}
    create = {"env": {"type": "pendulum", "import_names": ["dizoo.classic_control.pendulum.envs.pendulum_env"]},
              "env_manager": {"type": "base"}, "policy": {"type": ptype}}
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
    torch.manual_seed(0)
    return create_policy(cfg.policy, enable_field=["learn", "eval"])


def _continuous_data(n: int = 256) -> OfflineDataset:
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(n, 3)).astype(np.float32)
    action = np.tanh(obs[:, :1] * 0.8).astype(np.float32)  # the behaviour policy: a fixed function of the state
    return OfflineDataset(obs, action, -np.abs(action[:, 0]).astype(np.float32), np.zeros(n, bool),
                          rng.normal(size=(n, 3)).astype(np.float32))


QAC = dict(obs_shape=3, action_shape=1, twin_critic=True, actor_head_hidden_size=32, critic_head_hidden_size=32)


@pytest.mark.parametrize("ptype,model,learn", [
    ("cql", {**QAC, "action_space": "reparameterization"}, {"num_actions": 4}),
    ("cql", {**QAC, "action_space": "reparameterization"}, {"with_lagrange": True, "lagrange_thresh": 1.0}),
    ("td3_bc", {**QAC, "action_space": "regression"}, {}),
    ("iql", {**QAC, "action_space": "reparameterization"}, {"value_hidden_size": 32}),
    ("bc", {"obs_shape": 3, "action_shape": 1, "action_space": "regression"}, {"optimizer": "Adam",
                                                                             "learning_rate": 1e-3}),
])
def test_learn_step_runs_on_columns_and_on_sample_dicts_and_resumes_exactly(ptype, model, learn):
    extra = ptype == "bc"
    policy = _bc_policy(model, continuous=True, **learn) if extra else _policy(ptype, model, batch_size=32, **learn)
    data = _continuous_data()
    out = policy.learn_mode.forward(data.batch(np.arange(32)))
    assert all(np.isfinite(v) for v in out.values() if isinstance(v, float))
    policy.learn_mode.forward(data.samples(np.arange(32, 64)))
    state = copy.deepcopy(policy.learn_mode.state_dict())
    twin = _bc_policy(model, continuous=True, **learn) if extra else _policy(ptype, model, batch_size=32, **learn)
    twin.learn_mode.load_state_dict(state)
    torch.manual_seed(1)
    a = policy.learn_mode.forward(data.batch(np.arange(64, 96)))
    torch.manual_seed(1)
    b = twin.learn_mode.forward(data.batch(np.arange(64, 96)))
    assert a == b  # same state, same RNG: the same update, bit for bit


def _bc_policy(model: dict, **cfg):
    learn = {k: cfg.pop(k) for k in ("optimizer", "learning_rate") if k in cfg}
    main = {"exp_name": "unused", "env": {}, "policy": {"cuda": False, "model": model, "learn": learn, **cfg}}
    create = {"env": {"type": "pendulum", "import_names": ["dizoo.classic_control.pendulum.envs.pendulum_env"]},
              "env_manager": {"type": "base"}, "policy": {"type": "bc"}}
    c = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
    torch.manual_seed(0)
    return create_policy(c.policy, enable_field=["learn", "eval"])


def _act(policy, obs: np.ndarray) -> np.ndarray:
    out = policy.eval_mode.forward({i: o for i, o in enumerate(obs)})
    return np.stack([out[i]["action"] for i in range(len(obs))]).reshape(len(obs), -1).squeeze(-1)


@pytest.mark.parametrize("action_space", ["regression", "reparameterization"])
def test_continuous_bc_imitates_the_data(action_space):
    policy = _bc_policy({"obs_shape": 3, "action_shape": 1, "action_space": action_space}, continuous=True,
                        optimizer="Adam", learning_rate=3e-3)
    data = _continuous_data(512)
    for i in range(300):
        policy.learn_mode.forward(data.batch(np.arange(i * 64 % 512, i * 64 % 512 + 64)))
    err = np.abs(_act(policy, data.obs[:100]) - data.action[:100, 0]).mean()
    assert err < 0.15


def test_td3_bc_actor_follows_the_data_when_the_q_term_is_small():
    policy = _policy("td3_bc", {**QAC, "action_space": "regression"}, batch_size=64, alpha=1e-3,
                     learning_rate_actor=3e-3, actor_update_freq=1)
    data = _continuous_data(512)
    for i in range(300):
        policy.learn_mode.forward(data.batch(np.arange(i * 64 % 512, i * 64 % 512 + 64)))
    assert np.abs(_act(policy, data.obs[:100]) - data.action[:100, 0]).mean() < 0.1


def test_cql_penalty_pushes_q_of_unseen_actions_below_q_of_data_actions():
    policy = _policy("cql", {**QAC, "action_space": "reparameterization"}, batch_size=64, min_q_weight=5.0,
                     num_actions=4, learning_rate_q=3e-3)
    data = _continuous_data(512)
    for i in range(200):
        out = policy.learn_mode.forward(data.batch(np.arange(i * 64 % 512, i * 64 % 512 + 64)))
    assert np.isfinite(out["cql_loss"])
    model = policy.learn_mode.get_attribute("model")
    obs = torch.as_tensor(data.obs[:256])
    with torch.no_grad():
        q_data = model.compute_critic({"obs": obs, "action": torch.as_tensor(data.action[:256])})["q_value"][0]
        q_flip = model.compute_critic({"obs": obs, "action": -torch.as_tensor(data.action[:256])})["q_value"][0]
    assert (q_data - q_flip).mean() > 0.1


def test_discrete_cql_and_bc_learn_the_data_action():
    rng = np.random.default_rng(0)
    n = 512
    obs = rng.normal(size=(n, 4)).astype(np.float32)
    action = (obs[:, 0] > 0).astype(np.int64)
    data = OfflineDataset(obs, action, np.ones(n, np.float32), np.zeros(n, bool), obs[::-1].copy())
    data.set_nstep(3, 0.97)
    for ptype, learn in (("discrete_cql", {"min_q_weight": 4.0}), ("bc", {"learning_rate": 0.01})):
        main = {"exp_name": "unused", "env": {}, "policy": {"cuda": False, "learn": {"batch_size": 64, **learn},
                "model": {"obs_shape": 4, "action_shape": 2, "encoder_hidden_size_list": [32, 32]}}}
        create = {"env": {"type": "cartpole", "import_names": ["dizoo.classic_control.cartpole.envs.cartpole_env"]},
                  "env_manager": {"type": "base"}, "policy": {"type": ptype}}
        cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
        torch.manual_seed(0)
        policy = create_policy(cfg.policy, enable_field=["learn", "eval"])
        for i in range(300):
            policy.learn_mode.forward(data.batch(np.arange(i * 64 % n, i * 64 % n + 64)))
        acc = (_act(policy, obs[:200]) == action[:200]).mean()
        assert acc > 0.9, (ptype, acc)
