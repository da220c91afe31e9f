"""BaseSerialCommander: turns the learner's and collector's progress into the collector's policy kwargs."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.utils import SERIAL_COMMANDER_REGISTRY, config_of, import_module


@SERIAL_COMMANDER_REGISTRY.register("base")
class BaseSerialCommander:
    """Each ``step()`` asks the policy's command mode for collect settings (e.g. ``{'eps': 0.42}``) given
    ``{'learner_train_iter': learner.train_iter, 'collector_envstep': collector.envstep}``."""

    config: dict = dict()

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Mapping, learner: Any, collector: Any, evaluator: Any, replay_buffer: Any,
                 policy: Any = None) -> None:
        self._cfg = cfg
        self._learner = learner
        self._collector = collector
        self._evaluator = evaluator
        self._replay_buffer = replay_buffer
        self._policy = policy
        self._step_count = 0

    @property
    def policy(self) -> Any:
        """The policy's command-mode view."""
        return self._policy

    @policy.setter
    def policy(self, policy: Any) -> None:
        self._policy = policy

    def step(self) -> dict[str, Any]:
        """Collect kwargs for the next ``collector.collect`` call (empty without a policy)."""
        self._step_count += 1
        if self._policy is None:
            return {}
        info = {"learner_train_iter": self._learner.train_iter, "collector_envstep": self._collector.envstep,
                "envstep": self._collector.envstep}  # 'envstep': DI-engine's key, read by its command modes
        return dict(self._policy.get_setting_collect(info))

    def state_dict(self) -> dict[str, Any]:
        return {"step_count": self._step_count}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._step_count = int(state.get("step_count", 0))


def create_serial_commander(cfg: Mapping, learner: Any, collector: Any, evaluator: Any, replay_buffer: Any,
                            policy: Any = None) -> BaseSerialCommander:
    """The serial commander ``cfg.type`` names (default 'base'), after importing ``cfg.import_names``."""
    import_module(cfg.get("import_names"))
    cls = SERIAL_COMMANDER_REGISTRY.get(cfg.get("type", "base"), where="policy.other.commander.type")
    return cls(cfg, learner, collector, evaluator, replay_buffer, policy)
