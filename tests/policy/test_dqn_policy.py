import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from ding.envs.env.base_env import BaseEnvTimestep
from ding.policy import DQNPolicy, create_policy
from ding.rl_utils import get_epsilon_greedy_fn
from ding.utils import CheckpointError, ConfigError, set_pkg_seed

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16])


def make_policy(seed=0, **overrides):
    torch.manual_seed(seed)
    cfg = dict(model=dict(MODEL), **overrides)
    return DQNPolicy(cfg)


def make_batch(n=32, seed=0, nstep=1, **extra):
    rng = np.random.default_rng(seed)
    batch = []
    for i in range(n):
        sample = {
            "obs": rng.standard_normal(4).astype(np.float32),
            "next_obs": rng.standard_normal(4).astype(np.float32),
            "action": np.array(i % 2, dtype=np.int64),
            "reward": rng.standard_normal(nstep).astype(np.float32) if nstep > 1 else np.array([1.0], np.float32),
            "done": bool(i % 5 == 0),
        }
        if nstep > 1:
            sample["value_gamma"] = np.float32(0.97 ** nstep)
        sample.update({k: v[i] if isinstance(v, (list, np.ndarray)) else v for k, v in extra.items()})
        batch.append(sample)
    return batch


def obs_dict(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return {env_id: rng.standard_normal(4).astype(np.float32) for env_id in range(n)}


# ---------------------------------------------------------------------------------------------------- collect / eval
def test_collect_forward_output_format():
    policy = make_policy()
    out = policy.collect_mode.forward(obs_dict(3), eps=0.5)
    assert list(out) == [0, 1, 2]
    for value in out.values():
        assert set(value) == {"action", "logit"}
        action = value["action"]
        assert isinstance(action, (np.ndarray, np.integer)) and action.shape == () and action.dtype == np.int64
        assert isinstance(value["logit"], np.ndarray) and value["logit"].shape == (2,)
        assert value["logit"].dtype == np.float32


def test_collect_eps0_is_greedy_and_eval_is_greedy():
    policy = make_policy()
    obs = obs_dict(8)
    out = policy.collect_mode.forward(obs, eps=0.0)
    ev = policy.eval_mode.forward(obs)
    for env_id in obs:
        assert out[env_id]["action"] == np.argmax(out[env_id]["logit"])
        assert ev[env_id]["action"] == out[env_id]["action"]


def test_collect_eps1_is_uniform_random_and_reproducible():
    policy = make_policy()
    obs = obs_dict(8)
    greedy = np.array([v["action"] for v in policy.eval_mode.forward(obs).values()])
    set_pkg_seed(3)
    actions = np.array([[v["action"] for v in policy.collect_mode.forward(obs, eps=1.0).values()] for _ in range(200)])
    assert 0.4 < actions.mean() < 0.6  # both actions, about equally often
    assert (actions != greedy).any(axis=1).mean() > 0.9  # ignores the greedy choice
    set_pkg_seed(3)
    again = np.array([[v["action"] for v in policy.collect_mode.forward(obs, eps=1.0).values()] for _ in range(200)])
    assert (actions == again).all()


def test_collect_needs_eps_and_right_obs_shape():
    policy = make_policy()
    with pytest.raises(ValueError, match=r"pass eps=<float>"):
        policy.collect_mode.forward(obs_dict(2))
    with pytest.raises(ValueError, match=r"observations have shape \(3,\) but the model expects \(4,\) "
                                         r"\(policy\.model\.obs_shape\)"):
        policy.collect_mode.forward({0: np.zeros(3, np.float32)}, eps=0.1)
    with pytest.raises(ValueError, match="observations of different shapes cannot be batched"):
        policy.eval_mode.forward({0: np.zeros(4, np.float32), 1: np.zeros(5, np.float32)})
    assert policy.collect_mode.forward({}, eps=0.1) == {}


def test_collect_accepts_float64_and_tensor_obs():
    policy = make_policy()
    a = policy.eval_mode.forward({0: np.ones(4)})[0]["logit"]
    b = policy.eval_mode.forward({0: torch.ones(4)})[0]["logit"]
    assert np.allclose(a, b)


@pytest.mark.parametrize("done, truncated, expect_done, expect_trunc", [
    (False, False, False, False), (True, False, True, False), (True, True, False, True),
])
def test_process_transition_done_is_termination_only(done, truncated, expect_done, expect_trunc):
    policy = make_policy()
    obs, next_obs = np.zeros(4, np.float32), np.ones(4, np.float32)
    output = {"action": np.array(1), "logit": np.zeros(2, np.float32)}
    timestep = BaseEnvTimestep(next_obs, np.array([0.5], np.float32), done, {"truncated": truncated})
    t = policy.collect_mode.process_transition(obs, output, timestep)
    assert t["obs"] is obs and t["next_obs"] is next_obs and t["action"] is output["action"]
    assert t["reward"][0] == 0.5 and t["done"] is expect_done and t["truncated"] is expect_trunc


def test_get_train_sample_nstep1_passthrough_and_nstep3():
    transitions = make_batch(6)
    for t in transitions:
        t["done"], t["truncated"] = False, False
    assert make_policy().collect_mode.get_train_sample(transitions) is transitions
    policy = make_policy(nstep=3)
    samples = policy.collect_mode.get_train_sample(transitions)
    assert len(samples) == 4 and samples[0]["reward"].shape == (3,)
    assert samples[0]["next_obs"] is transitions[2]["next_obs"]
    assert policy.collect_mode.get_attribute("nstep") == 3
    assert make_policy().collect_mode.get_attribute("nstep") == 1


def test_unroll_len_must_be_one():
    with pytest.raises(ConfigError, match=r"policy\.collect\.unroll_len: DQN trains on single transitions"):
        make_policy(collect=dict(unroll_len=2))


# ---------------------------------------------------------------------------------------------------- learn
def test_learn_step_reduces_loss_on_fixed_batch():
    policy = make_policy(learn=dict(learning_rate=0.01))
    batch = make_batch(32)
    first = policy.learn_mode.forward(batch)
    for _ in range(60):
        last = policy.learn_mode.forward(batch)
    assert last["total_loss"] < 0.2 * first["total_loss"]
    assert set(policy.learn_mode.monitor_vars()) <= set(first)
    assert all(isinstance(first[k], float) for k in policy.learn_mode.monitor_vars())
    assert "priority" not in first


def test_double_dqn_target_uses_online_argmax_and_target_value():
    class Linear(nn.Module):
        obs_shape = 2  # an int is accepted as well as a tuple

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2, bias=False)

        def forward(self, x):
            return {"logit": self.fc(x)}

    policy = DQNPolicy(dict(discount_factor=0.5, model=dict()), model=Linear())
    online, target = policy.learn_mode.get_attribute("model"), policy.learn_mode.get_attribute("target_model")
    with torch.no_grad():
        online.fc.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))  # online Q(next) = [1, 2] -> argmax 1
        target.fc.weight.copy_(torch.tensor([[10.0, 0.0], [0.0, 3.0]]))  # target Q(next) = [10, 3]: max would be 10
    sample = {"obs": np.array([1.0, 0.0], np.float32), "next_obs": np.array([1.0, 1.0], np.float32),
              "action": np.array(0), "reward": np.array([1.0], np.float32), "done": False}
    out = policy.learn_mode.forward([sample])
    with pytest.raises(ValueError, match=r"model expects \(2,\)"):
        policy.eval_mode.forward({0: np.zeros(3, np.float32)})
    # q(s, a=0) = 1; target = 1 + 0.5 * target_Q(next)[online argmax = 1] = 1 + 0.5 * 3 = 2.5; td = 1.5
    assert out["total_loss"] == pytest.approx(1.5**2)
    assert out["td_error"] == pytest.approx(1.5)


def test_ignore_done_bootstraps_terminal_samples():
    batch = make_batch(16)
    for s in batch:
        s["done"] = True
    base = make_policy().learn_mode.forward(copy.deepcopy(batch))["total_loss"]
    ignored = make_policy(learn=dict(ignore_done=True)).learn_mode.forward(copy.deepcopy(batch))["total_loss"]
    for s in batch:
        s["done"] = False
    not_done = make_policy().learn_mode.forward(batch)["total_loss"]
    assert ignored == pytest.approx(not_done) and ignored != pytest.approx(base)


def test_nstep_learn_uses_value_gamma():
    policy = make_policy(nstep=3)
    batch = make_batch(16, nstep=3)
    out = policy.learn_mode.forward(batch)
    assert np.isfinite(out["total_loss"])
    with pytest.raises(ValueError, match=r"reward has 1 steps .* but nstep=3"):
        make_policy(nstep=3).learn_mode.forward(make_batch(4))


def test_priority_output_shape_and_value():
    policy = make_policy(priority=True)
    out = policy.learn_mode.forward(make_batch(24))
    prio = out["priority"]
    assert isinstance(prio, np.ndarray) and prio.shape == (24,) and prio.dtype == np.float32
    assert (prio >= 0).all() and prio.mean() == pytest.approx(out["td_error"], rel=1e-5)


def test_is_weights_scale_loss():
    batch = make_batch(16)
    losses = {}
    for w in (0.0, 1.0, 2.0):
        policy = make_policy(priority=True, priority_IS_weight=True)
        losses[w] = policy.learn_mode.forward([dict(s, IS=np.float32(w)) for s in batch])["total_loss"]
    assert losses[0.0] == 0.0
    assert losses[2.0] == pytest.approx(2 * losses[1.0], rel=1e-5)
    with pytest.raises(ValueError, match=r"samples lack key\(s\) \['IS'\].*set policy.priority=True"):
        make_policy(priority_IS_weight=True).learn_mode.forward(batch)


def test_learn_input_errors():
    policy = make_policy()
    with pytest.raises(ValueError, match="expected a non-empty list of samples"):
        policy.learn_mode.forward([])
    with pytest.raises(ValueError, match=r"samples lack key\(s\) \['next_obs'\]"):
        policy.learn_mode.forward([{k: v for k, v in s.items() if k != "next_obs"} for s in make_batch(2)])


def test_hard_target_update_every_freq_steps():
    policy = make_policy(learn=dict(target_update_freq=2))
    model, target = policy.learn_mode.get_attribute("model"), policy.learn_mode.get_attribute("target_model")
    before = copy.deepcopy(target.state_dict())
    batch = make_batch(8)
    policy.learn_mode.forward(batch)
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())
    policy.learn_mode.forward(batch)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in target.state_dict().items())


def test_soft_target_update_when_freq_is_zero():
    policy = make_policy(learn=dict(target_update_freq=0, target_theta=0.25))
    model, target = policy.learn_mode.get_attribute("model"), policy.learn_mode.get_attribute("target_model")
    old_target = copy.deepcopy(target.state_dict())
    policy.learn_mode.forward(make_batch(8))
    for k, v in target.state_dict().items():
        assert torch.allclose(v, 0.75 * old_target[k] + 0.25 * model.state_dict()[k], atol=1e-6)
    with pytest.raises(ConfigError, match=r"policy\.learn\.target_theta: must be in \(0, 1\]"):
        make_policy(learn=dict(target_update_freq=None, target_theta=0.0))


# ---------------------------------------------------------------------------------------------------- state dicts
def test_state_dict_round_trip_continues_identically():
    batch = make_batch(32)
    a = make_policy(seed=0, learn=dict(target_update_freq=3))
    for _ in range(2):
        a.learn_mode.forward(batch)
    saved = copy.deepcopy(a.learn_mode.state_dict())
    assert set(saved) == {"model", "target_model", "optimizer", "learn_step"} and saved["learn_step"] == 2
    b = make_policy(seed=1, learn=dict(target_update_freq=3))  # different initial weights
    b.learn_mode.load_state_dict(saved)
    for _ in range(3):  # crosses a hard target update at step 3
        out_a, out_b = a.learn_mode.forward(batch), b.learn_mode.forward(batch)
        assert out_a == out_b
    for key in ("model", "target_model"):
        sa, sb = a.learn_mode.state_dict()[key], b.learn_mode.state_dict()[key]
        assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_collect_and_eval_state_dict():
    a, b = make_policy(seed=0), make_policy(seed=1)
    assert set(a.collect_mode.state_dict()) == {"model"}
    b.eval_mode.load_state_dict(a.eval_mode.state_dict())
    obs = obs_dict(4)
    assert np.allclose(a.eval_mode.forward(obs)[0]["logit"], b.eval_mode.forward(obs)[0]["logit"])
    c = make_policy(seed=2)
    c.learn_mode.load_state_dict(a.collect_mode.state_dict())  # weights only: target = copy, fresh Adam
    assert all(torch.equal(v, a.learn_mode.state_dict()["model"][k])
               for k, v in c.learn_mode.get_attribute("target_model").state_dict().items())


def test_wrong_shape_checkpoint_names_parameter_and_shapes():
    small = DQNPolicy(dict(model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[8, 16])))
    policy = make_policy()
    with pytest.raises(CheckpointError, match=r"parameter 'encoder\.main\.0\.weight': checkpoint shape \(8, 4\) "
                                              r"!= model shape \(16, 4\)"):
        policy.learn_mode.load_state_dict(small.learn_mode.state_dict())
    with pytest.raises(CheckpointError, match=r"no 'model' entry"):
        policy.eval_mode.load_state_dict({"weights": {}})


# ---------------------------------------------------------------------------------------------------- command / cfg
def test_command_mode_epsilon_from_envstep():
    policy = make_policy(other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=100)))
    expected = get_epsilon_greedy_fn(1.0, 0.1, 100, "linear")
    for step in (0, 50, 100, 1000):
        got = policy.command_mode.get_setting_collect({"learner_train_iter": 0, "collector_envstep": step})
        assert got == {"eps": pytest.approx(expected(step))}
    assert policy.command_mode.get_setting_learn({}) == {} and policy.command_mode.get_setting_eval({}) == {}
    with pytest.raises(ValueError, match="command_info needs 'collector_envstep'"):
        policy.command_mode.get_setting_collect({"envstep": 3})


def test_default_config_schema():
    cfg = DQNPolicy.default_config()
    assert cfg.type == "dqn" and cfg.cfg_type == "DQNPolicyDict"
    for key in ("cuda", "on_policy", "priority", "priority_IS_weight", "discount_factor", "nstep", "model",
                "random_collect_size"):
        assert key in cfg
    assert set(cfg.learn) == {"update_per_collect", "batch_size", "learning_rate", "target_update_freq",
                              "target_theta", "ignore_done", "learner", "resume_training"}
    assert set(cfg.collect) == {"n_sample", "n_episode", "unroll_len", "collector"}
    assert set(cfg.other) == {"eps", "replay_buffer", "commander"}
    assert DQNPolicy.open_config_keys == ("model",)
    cfg.learn.batch_size = 1
    assert DQNPolicy.default_config().learn.batch_size == 64  # a fresh copy each time


def test_wrong_model_kwarg_in_policy_config():
    with pytest.raises(ConfigError, match=r"policy\.model\.hiden_size: unknown argument of model .*DQN"):
        DQNPolicy(dict(model=dict(obs_shape=4, action_shape=2, hiden_size=8)))


def test_create_policy_from_config_and_attributes():
    policy = create_policy(dict(type="dqn", model=dict(MODEL), learn=dict(batch_size=17)), enable_field=["learn"])
    assert isinstance(policy, DQNPolicy)
    assert policy.learn_mode.get_attribute("batch_size") == 17
    assert policy.learn_mode.get_attribute("cfg").learn.batch_size == 17
    assert policy.learn_mode.get_attribute("device") == torch.device("cpu")
    policy.learn_mode.set_attribute("custom", 5)
    assert policy.learn_mode.get_attribute("custom") == 5
    with pytest.raises(AttributeError, match=r"no attribute 'nothing' \(looked for self\._nothing"):
        policy.learn_mode.get_attribute("nothing")
    with pytest.raises(RuntimeError, match="the 'collect' mode is not enabled"):
        policy.collect_mode
