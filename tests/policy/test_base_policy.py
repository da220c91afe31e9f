import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

from ding.policy import DQNPolicy, Policy, create_policy, get_policy_cls
from ding.utils import POLICY_REGISTRY, ConfigError, RegistryError


class TinyNet(nn.Module):
    def __init__(self, obs_shape=3, action_shape=2):
        super().__init__()
        self.fc = nn.Linear(obs_shape, action_shape)

    def forward(self, x):
        return {"logit": self.fc(x)}


class MinimalPolicy(Policy):
    """The smallest complete policy: greedy actions, one-step regression on rewards."""

    config = dict(type="minimal", learn=dict(learning_rate=0.1, batch_size=4), collect=dict(n_sample=4))

    def default_model(self):
        return "dqn", ["ding.model.template.q_learning"]

    def _init_learn(self):
        self._optimizer = torch.optim.SGD(self._model.parameters(), lr=self._cfg.learn.learning_rate)
        self.inits = getattr(self, "inits", []) + ["learn"]

    def _forward_learn(self, data):
        obs = torch.stack([torch.as_tensor(d["obs"]) for d in data])
        loss = self._model(obs)["logit"].pow(2).mean()
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return {"total_loss": loss.item()}

    def _monitor_vars_learn(self):
        return ["total_loss"]

    def _init_collect(self):
        self.inits = getattr(self, "inits", []) + ["collect"]

    def _forward_collect(self, data, **kwargs):
        return self._forward_eval(data)

    def _process_transition(self, obs, policy_output, timestep):
        return {"obs": obs, "action": policy_output["action"]}

    def _get_train_sample(self, transitions):
        return transitions

    def _init_eval(self):
        self.inits = getattr(self, "inits", []) + ["eval"]

    def _forward_eval(self, data):
        obs = torch.as_tensor(np.stack(list(data.values())), dtype=torch.float32)
        with torch.no_grad():
            action = self._model(obs)["logit"].argmax(-1).numpy()
        return {k: {"action": a} for k, a in zip(data, action)}


@pytest.fixture
def registered_minimal():
    POLICY_REGISTRY.register("test_minimal_policy", MinimalPolicy)
    yield
    POLICY_REGISTRY.pop("test_minimal_policy")


def test_mode_views_are_namedtuples_of_bound_methods():
    policy = MinimalPolicy({}, model=TinyNet())
    assert policy.learn_mode._fields == ("forward", "reset", "info", "monitor_vars", "get_attribute",
                                         "set_attribute", "state_dict", "load_state_dict")
    assert policy.collect_mode._fields == ("forward", "process_transition", "get_train_sample", "reset",
                                           "get_attribute", "set_attribute", "state_dict", "load_state_dict")
    assert policy.eval_mode._fields == ("forward", "reset", "get_attribute", "set_attribute", "state_dict",
                                        "load_state_dict")
    assert policy.command_mode._fields == ("get_setting_learn", "get_setting_collect", "get_setting_eval")
    assert policy.learn_mode is policy.learn_mode  # built once
    assert policy.learn_mode.forward == policy._forward_learn
    assert policy.inits == ["learn", "collect", "eval"]
    assert "MinimalPolicy" in policy.learn_mode.info()


def test_defaults_of_the_base_class():
    policy = MinimalPolicy({}, model=TinyNet())
    obs = {0: np.zeros(3, np.float32), 5: np.ones(3, np.float32)}
    assert set(policy.collect_mode.forward(obs)) == {0, 5}
    assert policy.command_mode.get_setting_collect({"collector_envstep": 0}) == {}
    assert policy.collect_mode.reset() is None and policy.eval_mode.reset([0]) is None
    assert set(policy.learn_mode.state_dict()) == {"model", "optimizer"}
    assert policy.collect_mode.get_attribute("nstep") == 1
    other = MinimalPolicy({}, model=TinyNet())
    other.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    assert torch.equal(other._model.fc.weight, policy._model.fc.weight)


def test_default_config_merges_the_mro():
    cfg = MinimalPolicy.default_config()
    assert cfg.type == "minimal" and cfg.learn.learning_rate == 0.1
    assert cfg.learn.learner == {} and cfg.collect.unroll_len == 1  # from Policy.config
    assert cfg.cfg_type == "MinimalPolicyDict"
    # A partial user config is merged over the defaults.
    policy = MinimalPolicy({"learn": {"batch_size": 9}}, model=TinyNet())
    assert policy.learn_mode.get_attribute("cfg").learn.learning_rate == 0.1
    assert policy.learn_mode.get_attribute("batch_size") == 9


def test_enable_field_limits_initialised_modes():
    policy = MinimalPolicy({}, model=TinyNet(), enable_field=["eval"])
    assert policy.inits == ["eval"]
    with pytest.raises(RuntimeError, match=r"MinimalPolicy\.learn_mode: the 'learn' mode is not enabled"):
        policy.learn_mode
    with pytest.raises(ValueError, match=r"enable_field: unknown mode 'colect'\. Did you mean 'collect'\?"):
        MinimalPolicy({}, model=TinyNet(), enable_field=["colect"])


def test_model_built_from_default_model_and_checked():
    policy = MinimalPolicy({"model": {"obs_shape": 3, "action_shape": 2}})
    assert type(policy.learn_mode.get_attribute("model")).__name__ == "DQN"
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got dict"):
        MinimalPolicy({}, model={"obs_shape": 3})


def test_policy_without_default_model():
    class NoDefault(MinimalPolicy):
        def default_model(self):
            return Policy.default_model(self)

    with pytest.raises(ConfigError, match="NoDefault has no default model: pass model=... or set policy.model.type"):
        NoDefault({})


def test_abstract_methods_must_be_implemented():
    class Incomplete(Policy):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Incomplete({}, model=TinyNet())


def test_cuda_requested_without_cuda_runs_on_the_cpu_with_one_warning_line(monkeypatch, caplog):
    """DI-engine's files all say cuda=True: on a CPU-only machine the policy runs on the CPU, saying so once."""
    import ding.policy.base_policy as base_policy

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(base_policy, "_CPU_FALLBACK_NOTED", False)
    with caplog.at_level("WARNING", logger="ding.policy.base_policy"):
        first = MinimalPolicy({"cuda": True}, model=TinyNet())
        second = MinimalPolicy({"cuda": True}, model=TinyNet())
    assert first._device == second._device == torch.device("cpu")
    assert next(first._model.parameters()).device.type == "cpu"
    lines = [r.getMessage() for r in caplog.records if "cuda" in r.getMessage()]
    assert lines == ["policy.cuda=True, but torch has no usable CUDA device here: running on the CPU"]


def test_create_policy_with_registered_custom_policy(registered_minimal):
    policy = create_policy({"type": "test_minimal_policy"}, model=TinyNet(), enable_field=["collect"])
    assert isinstance(policy, MinimalPolicy) and policy.inits == ["collect"]


def test_get_policy_cls_imports_import_names():
    sys.modules.pop("_policy_plugin", None)
    try:
        cls = get_policy_cls({"type": "test_plugin_dqn", "import_names": ["_policy_plugin"]})
        assert cls.__name__ == "PluginDQNPolicy" and issubclass(cls, DQNPolicy)
        assert cls.default_config().plugin_flag is True and cls.default_config().nstep == 1
    finally:
        POLICY_REGISTRY.pop("test_plugin_dqn", None)
        sys.modules.pop("_policy_plugin", None)


def test_unknown_policy_type_suggests():
    with pytest.raises(RegistryError, match=r"policy\.type: unknown policy type 'dqm'\. Did you mean 'dqn'"):
        create_policy({"type": "dqm", "model": {"obs_shape": 4, "action_shape": 2}})
    with pytest.raises(ConfigError, match=r"policy\.type: missing"):
        get_policy_cls({})
    with pytest.raises(RegistryError, match=r"cannot import module 'no_such_policy_module'"):
        get_policy_cls({"type": "dqn", "import_names": ["no_such_policy_module"]})


def test_ding_policies_views_are_their_own_methods():
    """ding's own policies follow the numpy convention: no conversion layer between the workers and the policy."""
    from ding.policy import DQNPolicy

    policy = DQNPolicy(dict(model=dict(obs_shape=4, action_shape=2), other=dict(eps=dict(type="exp", start=1.0,
                                                                                         end=0.1, decay=100))))
    assert policy.collect_mode.forward == policy._forward_collect
    assert policy.collect_mode.get_train_sample == policy._get_train_sample
    assert policy.eval_mode.forward == policy._forward_eval
    assert policy.learn_mode.state_dict == policy._state_dict_learn
