"""Multi-agent SAC for Box actions: what policy type ``sac`` with ``multi_agent=True`` builds (DI-engine's naming;
``discrete_sac`` with ``multi_agent=True`` is the discrete MASAC of :mod:`ding.policy.masac`).

A ``ContinuousMAQAC`` model: one squashed-Gaussian actor shared by the agents (each reads its own ``agent_state``),
twin critics of each agent's ``Q(global_state, own action)``. Per agent, with the team reward:

    critics : Q_i(s, a) -> r_team + gamma * (1 - done) * (min_i Q'_i(s', a') - alpha * log pi(a'|o')), a' ~ pi(.|o')
    actor   : minimise alpha * log pi(a|o) - min_i Q_i(s, a), a ~ pi(.|o) reparameterised (critics held fixed)
    alpha   : learned towards ``target_entropy`` (default: minus the action dimensions), when auto_alpha

Actions lie in [-1, 1] (the env maps them: ``env.act_scale=True``); ``done`` is termination only (the ``max_cycles``
cut bootstraps). Collect samples the Gaussian; eval acts with ``tanh(mu)``.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from ding.rl_utils import min_q, sac_temperature_loss, squashed_gaussian_mode, squashed_gaussian_sample
from ding.utils import ConfigError

from .multi_agent_data import batch_agent_obs, collate_agent_transitions
from .qac_utils import ModeSwitch, check_actor_kind, optimizer_step
from .sac import SACPolicy


class ContinuousMASACPolicy(SACPolicy):
    """``sac`` with ``policy.multi_agent=True`` (see :meth:`SACPolicy.__new__`); SAC's config keys, learn state and
    resume, on an agent axis."""

    _learn_takes_columns = False  # its learn step reads the transitions' observation dicts
    multi_agent = True
    action_space_types = None  # type: ignore[assignment]  # a Dict of the agents' Box spaces (multi_agent_data)
    agent_action_space = gym.spaces.Box
    action_bounds = None  # type: ignore[assignment]  # [-1, 1] per agent, checked by ding.policy.multi_agent_data
    _model: Any  # ContinuousMAQAC, or a model with its interface (actor, critic, compute_actor, compute_critic)

    def default_model(self) -> tuple[str, list[str]]:
        return "continuous_maqac", ["ding.model.template.maqac"]

    def _check_common(self) -> None:
        if int(self._cfg.nstep) != 1:
            raise ConfigError(f"policy.nstep: multi-agent SAC trains on one-step targets, so it must be 1 "
                              f"(got {self._cfg.nstep})")
        if int(self._cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len: multi-agent SAC trains on single transitions, so it must "
                              f"be 1 (got {self._cfg.collect.unroll_len})")
        if self._cfg.priority:
            raise ConfigError("policy.priority: True is not supported by ding's multi-agent SAC; set it to False")
        check_actor_kind(self._model, "reparameterization", type(self).__name__)
        self._set_train = ModeSwitch(self._model)

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        b = collate_agent_transitions(data, np.float32, self._ignore_done, self._device,
                                      f"{type(self).__name__} learn_mode.forward")
        self._set_train(True)
        alpha = self._log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self._sample(b["next_obs"])  # (B, A, dim), (B, A)
            next_q = min_q(self._target_model.compute_critic({"obs": b["next_obs"], "action": next_action})["q_value"])
            target = b["reward"] + self._gamma * (1.0 - b["done"]) * (next_q - alpha * next_log_prob)
        q = self._model.compute_critic({"obs": b["obs"], "action": b["action"]})["q_value"]
        qs = q if isinstance(q, list) else [q]
        loss_q = torch.stack([(qi - target).pow(2).mean() for qi in qs]).sum()
        optimizer_step(self._optimizer_q, loss_q)
        action, log_prob = self._sample(b["obs"])
        with self._critics_fixed:
            q_pi = min_q(self._model.compute_critic({"obs": b["obs"], "action": action})["q_value"])
        loss_policy = (alpha * log_prob - q_pi).mean()
        optimizer_step(self._optimizer_policy, loss_policy)
        if self._optimizer_alpha is not None:
            optimizer_step(self._optimizer_alpha, sac_temperature_loss(self._log_alpha, log_prob, self._target_entropy))
        self._polyak.update(self._theta)
        return {"cur_lr_q": self._optimizer_q.param_groups[0]["lr"], "critic_loss": loss_q.item(),
                "policy_loss": loss_policy.item(), "alpha": alpha.item(),
                "entropy": -log_prob.detach().mean().item(), "q_value": min_q(q).detach().mean().item(),
                "td_error": (qs[0] - target).abs().mean().item()}

    def _sample(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        mu, sigma = self._model.compute_actor(obs)["logit"]
        return squashed_gaussian_sample(mu, sigma)

    # ------------------------------------------------------------------ collect / eval
    def _init_collect(self) -> None:
        self._check_common()

    def _init_eval(self) -> None:
        check_actor_kind(self._model, "reparameterization", type(self).__name__)
        self._set_train = ModeSwitch(self._model)

    def _act(self, data: dict[int, Any], where: str, sample: bool) -> dict[int, dict[str, Any]]:
        if not data:
            return {}
        env_ids, obs = batch_agent_obs(data, self._device, self._model, where)
        self._set_train(False)
        with torch.inference_mode():
            mu, sigma = self._model.compute_actor(obs)["logit"]
            action = (squashed_gaussian_sample(mu, sigma)[0] if sample else squashed_gaussian_mode(mu)).cpu().numpy()
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        """Each agent's action sampled from the squashed Gaussian (torch's global RNG): float32 (A, dim)."""
        return self._act(data, f"{type(self).__name__} collect_mode", sample=True)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        return self._act(data, f"{type(self).__name__} eval_mode", sample=False)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return transitions
