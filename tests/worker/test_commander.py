"""BaseSerialCommander: collect kwargs from the policy's command mode, registry, state."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from easydict import EasyDict

from ding.utils import SERIAL_COMMANDER_REGISTRY, RegistryError
from ding.worker.coordinator import BaseSerialCommander, create_serial_commander


class FakeCommand:
    def __init__(self):
        self.infos = []

    def get_setting_collect(self, info):
        self.infos.append(dict(info))
        return {"eps": 1.0 / (1 + info["collector_envstep"])}


def test_step_passes_progress_to_the_command_mode():
    learner = SimpleNamespace(train_iter=0)
    collector = SimpleNamespace(envstep=0)
    cmd = FakeCommand()
    commander = BaseSerialCommander(EasyDict(), learner, collector, None, None, cmd)
    assert commander.step() == {"eps": 1.0}
    learner.train_iter, collector.envstep = 12, 99
    assert commander.step() == {"eps": 0.01}
    # 'envstep' is DI-engine's key for the same count (its command modes read it)
    assert cmd.infos == [{"learner_train_iter": 0, "collector_envstep": 0, "envstep": 0},
                         {"learner_train_iter": 12, "collector_envstep": 99, "envstep": 99}]
    assert commander.policy is cmd
    assert commander.state_dict() == {"step_count": 2}
    commander.load_state_dict({"step_count": 7})
    assert commander.state_dict() == {"step_count": 7}


def test_no_policy_means_no_kwargs():
    commander = BaseSerialCommander(EasyDict(), None, None, None, None)
    assert commander.step() == {}
    commander.policy = FakeCommand()
    commander._learner, commander._collector = SimpleNamespace(train_iter=1), SimpleNamespace(envstep=3)
    assert commander.step() == {"eps": 0.25}


def test_registry_factory_and_default_config():
    assert SERIAL_COMMANDER_REGISTRY.get("base") is BaseSerialCommander
    assert BaseSerialCommander.default_config() == {"cfg_type": "BaseSerialCommanderDict"}
    c = create_serial_commander(EasyDict(), SimpleNamespace(train_iter=0), SimpleNamespace(envstep=0), None, None,
                                FakeCommand())
    assert isinstance(c, BaseSerialCommander)
    with pytest.raises(RegistryError, match="policy.other.commander.type.*Did you mean 'base'"):
        create_serial_commander(EasyDict(type="bse"), None, None, None, None)


def test_real_dqn_epsilon_decays_with_env_steps():
    from ding.policy import DQNPolicy

    policy = DQNPolicy(EasyDict(type="dqn", model=dict(obs_shape=4, action_shape=2),
                                other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=100))),
                       enable_field=["command"])
    collector = SimpleNamespace(envstep=0)
    commander = BaseSerialCommander(EasyDict(), SimpleNamespace(train_iter=0), collector, None, None,
                                    policy.command_mode)
    first = commander.step()["eps"]
    collector.envstep = 100
    last = commander.step()["eps"]
    assert first == pytest.approx(1.0) and last == pytest.approx(0.1)
