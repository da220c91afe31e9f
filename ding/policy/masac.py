"""MASAC (policy type ``discrete_sac`` with ``multi_agent=True``, DI-engine's MASAC file): soft actor-critic with a
categorical actor shared by the agents and twin critics of every action's Q-value on the global state.

With ``pi`` the actor's (masked) action probabilities and ``Q`` the twin critics (B, A, n), per agent:

    V'(s')    = sum_u pi(u|o') * (min_i Q'_i(s', u) - alpha * log pi(u|o'))      target critics
    critics   : Q_i(s, u_taken) -> r_team + gamma * (1 - done) * V'(s')
    actor     : minimise sum_u pi(u|o) * (alpha * log pi(u|o) - min_i Q_i(s, u))
    alpha     : log_alpha * (H(pi) - target_entropy), when auto_alpha

``done`` is termination only (the ``max_cycles`` cut bootstraps). Collect samples from ``pi``; eval takes its argmax.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from ding.config.ranges import at_least, between, greater_than
from ding.torch_utils.fast_import import make_adam
from ding.utils import POLICY_REGISTRY, ConfigError

from .actor_critic import _sample_categorical
from .base_policy import Policy, load_model_state, load_optimizer_state
from .common_utils import build_adam, step_transition
from .multi_agent_data import batch_agent_obs, collate_agent_transitions
from .qac_utils import PolyakUpdate, frozen_copy, optimizer_step


@POLICY_REGISTRY.register("discrete_sac")
class MASACPolicy(Policy):
    """Multi-agent discrete SAC on a ``MAQAC`` model (``discrete_sac``; ``multi_agent`` must be True)."""

    tensor_io = False
    multi_agent = True
    _model: Any  # MAQAC, or a model with its interface (actor, critic, compute_actor, compute_critic)
    action_space_types = None  # a Dict of the agents' Discrete spaces (checked by ding.policy.multi_agent_data)
    config = dict(
        type="discrete_sac",
        # Accepted for DI-engine configs: SAC trains off-policy (False only).
        on_policy=False,
        # Only the multi-agent form is built here (True only).
        multi_agent=True,
        priority=False,
        priority_IS_weight=False,
        # Env steps collected with uniformly random actions before training starts (read by the pipeline).
        random_collect_size=2000,
        # MAQAC kwargs: agent_obs_shape, global_obs_shape, action_shape, twin_critic, head sizes.
        model=dict(twin_critic=True),
        learn=dict(
            update_per_collect=10,
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            # Entropy temperature (initial value with auto_alpha).
            alpha=0.2,
            auto_alpha=True,
            # Accepted for DI-engine configs: log(alpha) is always what is learned.
            log_space=True,
            # Entropy the temperature aims at (nats per agent); None: 0.98 * log(n_actions).
            target_entropy=None,
            ignore_done=False,
        ),
        collect=dict(
            n_sample=400,
            unroll_len=1,
            # Accepted for DI-engine configs; the env count is env.collector_env_num.
            env_num=None,
        ),
        eval=dict(env_num=None),
        other=dict(
            # Accepted for DI-engine configs; unused (SAC explores by sampling its stochastic policy).
            eps=dict(type="linear", start=1.0, end=0.05, decay=100000),
            replay_buffer=dict(replay_buffer_size=100000),
        ),
    )
    config_ranges = {
        "learn.update_per_collect": at_least(1, integer=True),
        "learn.batch_size": at_least(1, integer=True),
        "learn.learning_rate_q": greater_than(0),
        "learn.learning_rate_policy": greater_than(0),
        "learn.learning_rate_alpha": greater_than(0),
        "learn.target_theta": between(0, 1),
        "learn.discount_factor": between(0, 1),
        "learn.alpha": greater_than(0),
    }

    def default_model(self) -> tuple[str, list[str]]:
        return "discrete_maqac", ["ding.model.template.maqac"]

    def _check(self) -> None:
        if not self._cfg.multi_agent:
            raise ConfigError("policy.multi_agent: ding's discrete_sac is the multi-agent MASAC; set "
                              "policy.multi_agent=True (a single-agent env with Discrete actions: use dqn or ppo)")
        if int(self._cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len: MASAC trains on single transitions, so it must be 1 "
                              f"(got {self._cfg.collect.unroll_len})")

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        self._check()
        learn = self._cfg.learn
        self._gamma, self._theta = float(learn.discount_factor), float(learn.target_theta)
        self._ignore_done = bool(learn.ignore_done)
        self._optimizer_q = build_adam(self._model.critic, learn.learning_rate_q)
        self._optimizer_policy = build_adam(self._model.actor, learn.learning_rate_policy)
        self._target_model = frozen_copy(self._model)
        self._polyak = PolyakUpdate(self._target_model, self._model)
        self._auto_alpha = bool(learn.auto_alpha)
        self._log_alpha = torch.tensor([math.log(learn.alpha)], device=self._device, requires_grad=self._auto_alpha)
        self._optimizer_alpha = make_adam([self._log_alpha], lr=learn.learning_rate_alpha) if self._auto_alpha else None
        n = int(self._model.action_shape)
        self._target_entropy = 0.98 * math.log(n) if learn.target_entropy is None else float(learn.target_entropy)

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        b = self._collate(data)
        self._model.train()
        alpha = self._log_alpha.detach().exp()
        with torch.no_grad():
            next_logp = F.log_softmax(self._model.compute_actor(b["next_obs"])["logit"], -1)
            next_q = _min_q(self._target_model.compute_critic(b["next_obs"])["q_value"])
            next_v = (next_logp.exp() * (next_q - alpha * next_logp)).sum(-1)  # (B, A)
            target = b["reward"] + self._gamma * (1.0 - b["done"]) * next_v
        qs = self._model.compute_critic(b["obs"])["q_value"]
        qs = qs if isinstance(qs, list) else [qs]
        taken = [q.gather(-1, b["action"].unsqueeze(-1)).squeeze(-1) for q in qs]
        loss_q = torch.stack([F.mse_loss(q, target) for q in taken]).sum()
        optimizer_step(self._optimizer_q, loss_q)
        logp = F.log_softmax(self._model.compute_actor(b["obs"])["logit"], -1)
        prob = logp.exp()
        with torch.no_grad():
            q_pi = _min_q(self._model.compute_critic(b["obs"])["q_value"])
        loss_policy = (prob * (alpha * logp - q_pi)).sum(-1).mean()
        optimizer_step(self._optimizer_policy, loss_policy)
        entropy = -(prob.detach() * logp.detach()).sum(-1)
        if self._optimizer_alpha is not None:
            optimizer_step(self._optimizer_alpha, (self._log_alpha * (entropy - self._target_entropy)).mean())
        self._polyak.update(self._theta)
        return {"cur_lr_q": self._optimizer_q.param_groups[0]["lr"], "critic_loss": float(loss_q.item()),
                "policy_loss": loss_policy.item(), "alpha": alpha.item(), "entropy": entropy.mean().item(),
                "q_value": taken[0].detach().mean().item()}

    def _collate(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        return collate_agent_transitions(data, np.int64, self._ignore_done, self._device,
                                         f"{type(self).__name__} learn_mode.forward")

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr_q", "critic_loss", "policy_loss", "alpha", "entropy", "q_value"]

    def _state_dict_learn(self) -> dict[str, Any]:
        state = {"model": self._model.state_dict(), "target_model": self._target_model.state_dict(),
                 "optimizer_q": self._optimizer_q.state_dict(), "optimizer_policy": self._optimizer_policy.state_dict(),
                 "log_alpha": self._log_alpha.detach()}
        if self._optimizer_alpha is not None:
            state["optimizer_alpha"] = self._optimizer_alpha.state_dict()
        return state

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        load_model_state(self._model, state_dict, "model")
        if "target_model" in state_dict:
            load_model_state(self._target_model, state_dict, "target_model")
        for key, opt in (("optimizer_q", self._optimizer_q), ("optimizer_policy", self._optimizer_policy),
                         ("optimizer_alpha", self._optimizer_alpha)):
            if key in state_dict and opt is not None:
                load_optimizer_state(opt, state_dict[key])
        if "log_alpha" in state_dict:
            with torch.no_grad():
                self._log_alpha.copy_(torch.as_tensor(state_dict["log_alpha"]).reshape(1))

    # ------------------------------------------------------------------ collect / eval
    def _init_collect(self) -> None:
        self._check()

    def _actor_logit(self, data: dict[int, Any], where: str) -> tuple[list[int], np.ndarray]:
        env_ids, obs = batch_agent_obs(data, self._device, self._model, where)
        self._model.eval()
        with torch.inference_mode():
            logit = self._model.compute_actor(obs)["logit"]
        return env_ids, logit.cpu().numpy()

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        """Each agent's action sampled from the actor (numpy's global RNG)."""
        if not data:
            return {}
        env_ids, logit = self._actor_logit(data, f"{type(self).__name__} collect_mode")
        b, a, n = logit.shape
        action = _sample_categorical(logit.reshape(b * a, n)).reshape(b, a)
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return step_transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return transitions

    def _init_eval(self) -> None:
        pass

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        if not data:
            return {}
        env_ids, logit = self._actor_logit(data, f"{type(self).__name__} eval_mode")
        action = logit.argmax(-1)
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}


def _min_q(q: Any) -> torch.Tensor:
    return torch.min(q[0], q[1]) if isinstance(q, list) and len(q) == 2 else (q[0] if isinstance(q, list) else q)


POLICY_REGISTRY.register("masac", MASACPolicy)
