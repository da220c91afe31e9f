"""DI-engine's command-mode bases, for policy files that add the command mode the way DI-engine does::

    @POLICY_REGISTRY.register('my_dqn_command')
    class MyDQNCommandModePolicy(MyDQNPolicy, EpsCommandModePolicy):
        pass

``create_policy`` builds the ``<type>_command`` class when the command mode is enabled (serial runs and the parallel
coordinator), so a config keeps naming ``type='my_dqn'``. ding's own policies carry their command mode themselves.
"""
from __future__ import annotations

from typing import Any, Mapping

from ding.rl_utils import get_epsilon_greedy_fn

from .base_policy import CommandModePolicy


def _envstep(command_info: Mapping[str, Any], who: str) -> int:
    for key in ("envstep", "collector_envstep"):
        if key in command_info:
            return int(command_info[key])
    raise ValueError(f"{who}.get_setting_collect: command_info needs 'envstep' (got keys {sorted(command_info)})")


class EpsCommandModePolicy(CommandModePolicy):
    """Collect setting ``{'eps': schedule(envstep)}`` from ``policy.other.eps`` (``type``, ``start``, ``end``,
    ``decay``), the epsilon-greedy schedule of DQN-like policies."""

    def _init_command(self) -> None:
        eps_cfg = self._cfg.other.get("eps")
        if eps_cfg is None:
            raise ValueError(f"{type(self).__name__}: policy.other.eps (type, start, end, decay) is needed for the "
                             f"epsilon-greedy command mode")
        self.epsilon_greedy = get_epsilon_greedy_fn(eps_cfg.start, eps_cfg.end, eps_cfg.decay, eps_cfg.type)

    def _get_setting_collect(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {"eps": self.epsilon_greedy(_envstep(command_info, type(self).__name__))}

    def _get_setting_learn(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_eval(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}


class DummyCommandModePolicy(CommandModePolicy):
    """A command mode that sets nothing (policies without a schedule: PPO, A2C, SAC, DDPG, TD3, ...)."""

    def _init_command(self) -> None:
        pass

    def _get_setting_collect(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_learn(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_eval(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}


__all__ = ["CommandModePolicy", "DummyCommandModePolicy", "EpsCommandModePolicy"]
