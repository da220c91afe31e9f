"""MAPPO: PPO (``ppo`` with ``multi_agent=True``) on a ``MAVAC`` model, one actor shared by the agents and a
centralized critic.

The update is PPO's own (:class:`~ding.policy.ppo.PPOPolicy`), on tensors with an agent axis: ``logit`` (B, A, n),
``action``, ``value``, ``adv``, ``return`` (B, A). What changes is the data: observations are DI-engine's
multi-agent dicts, the team reward (B,) and ``done`` are broadcast over the agents, and GAE runs per agent (each
agent's value sequence is its own row). Value normalisation, clipping and the epoch/minibatch loop are PPO's.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ding.utils import POLICY_REGISTRY
from ding.utils.data import SAMPLE_BATCH_TYPES, default_collate

from .actor_critic import _sample_categorical, _to_device
from .multi_agent_data import batch_agent_obs, stack_obs_dicts
from .ppo import PPOPolicy

_KEYS = ("action", "logit", "value", "reward", "done", "traj_flag")


@POLICY_REGISTRY.register("mappo")
class MAPPOPolicy(PPOPolicy):
    """What ``ppo`` with ``policy.multi_agent=True`` builds (see :meth:`PPOPolicy.__new__`)."""

    _learn_takes_columns = False
    multi_agent = True
    action_space_types = None  # a Dict of the agents' Discrete spaces (checked by ding.policy.multi_agent_data)

    def default_model(self) -> tuple[str, list[str]]:
        return "mavac", ["ding.model.template.mavac"]

    def _collate(self, data: list[dict[str, Any]], where: str) -> dict[str, Any]:
        """Stack the samples: ``obs`` / ``next_obs`` dicts (B, A, ...), ``action`` (B, A), ``logit`` (B, A, n),
        ``value`` (B, A), and ``reward``, ``done``, ``traj_flag`` broadcast to (B, A)."""
        if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
            raise ValueError(f"{where}: expected a non-empty list of samples, got {type(data).__name__}")
        missing = [k for k in ("obs", "next_obs", *_KEYS) if k not in data[0]]
        if missing:
            raise ValueError(f"{where}: samples lack key(s) {missing}; they have {sorted(data[0])} (samples must come "
                             f"from {type(self).__name__}'s collect_mode.process_transition / get_train_sample)")
        batch: dict[str, Any] = {k: _obs_tensors(stack_obs_dicts([d[k] for d in data])) for k in ("obs", "next_obs")}
        for k in _KEYS:
            batch[k] = default_collate([d[k] for d in data])
        agents = batch["action"].shape[1]
        batch["action"] = batch["action"].long()
        for k in ("reward", "done", "traj_flag"):
            batch[k] = batch[k].reshape(len(data), -1)[:, :1].expand(-1, agents)
        batch["done"], batch["traj_flag"] = batch["done"].bool(), batch["traj_flag"].bool()
        if self._cfg.learn.ignore_done:
            batch["done"] = torch.zeros_like(batch["done"])
        if self._device.type != "cpu":
            batch = _to_device(batch, self._device)
        return batch

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        """Each agent's action sampled from the shared actor (masked), with its ``logit`` (A, n) and ``value`` (A,)."""
        if not data:
            return {}
        env_ids, obs = batch_agent_obs(data, self._device, self._model, f"{type(self).__name__} collect_mode")
        self._set_train(False)
        with torch.inference_mode():
            out = self._model(obs, mode="compute_actor_critic")
        logit, value = out["logit"].cpu().numpy(), out["value"].cpu().numpy()
        b, a, n = logit.shape
        action = _sample_categorical(logit.reshape(b * a, n)).reshape(b, a)
        return {env_id: {"action": action[i], "logit": logit[i], "value": value[i]} for i, env_id in enumerate(env_ids)}

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """Each agent's most likely available action."""
        if not data:
            return {}
        env_ids, obs = batch_agent_obs(data, self._device, self._model, f"{type(self).__name__} eval_mode")
        self._set_train(False)
        with torch.inference_mode():
            action = self._model(obs, mode="compute_actor")["logit"].argmax(-1).cpu().numpy()
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}


def _obs_tensors(stacked: Any) -> Any:
    if isinstance(stacked, dict):
        return {k: torch.from_numpy(np.asarray(v, np.float32)) for k, v in stacked.items()}
    return {"agent_state": torch.from_numpy(np.asarray(stacked, np.float32))}
