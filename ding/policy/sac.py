"""SAC: soft actor-critic with twin critics, a tanh-squashed Gaussian actor and automatic entropy tuning."""
from __future__ import annotations

import math
from typing import Any, Mapping

import gymnasium as gym
import torch

from ding.config.ranges import at_least, between, greater_than
from ding.model import ContinuousQAC, hard_update
from ding.rl_utils import (
    critic_loss,
    min_q,
    qac_td_target,
    sac_temperature_loss,
    squashed_gaussian_mode,
    squashed_gaussian_sample,
)
from ding.torch_utils.fast_import import make_adam
from ding.utils import POLICY_REGISTRY, ConfigError

from .base_policy import Policy, load_model_state, load_optimizer_state
from .common_utils import batch_obs, build_adam, model_obs_shape, step_transition
from .qac_utils import (
    ACTION_BOUNDS,
    HeldFixed,
    ModeSwitch,
    PolyakUpdate,
    check_actor_kind,
    collate_qac_batch,
    frozen_copy,
    model_action_shape,
    optimizer_step,
    qac_train_samples,
)


@POLICY_REGISTRY.register("sac")
class SACPolicy(Policy):
    """Soft actor-critic (Haarnoja et al. 2018) for Box actions in [-1, 1].

    Critics regress on ``r + gamma * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`` with ``a' ~ pi(.|s')``; the actor
    minimises ``alpha * log pi(a|s) - min_i Q_i(s, a)`` through the reparameterised, tanh-squashed Gaussian; with
    ``auto_alpha`` the temperature ``alpha = exp(log_alpha)`` is learned towards the entropy ``target_entropy``
    (default ``-|A|``). Collect samples from the policy; eval acts with ``tanh(mu)``.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    # ding's numpy data convention (ding/policy/tensor_io.py): the views are the bound methods themselves
    tensor_io = False
    config = dict(
        type="sac",
        # Env steps collected with uniformly random actions before training starts (read by the pipeline).
        random_collect_size=10000,
        # n of the n-step return (1 = one-step TD).
        nstep=1,
        # Accepted for DI-engine configs; ignored (transitions always hold what SAC needs).
        transition_with_policy_data=True,
        # True builds the multi-agent SAC for Box actions (ContinuousMASACPolicy, model 'continuous_maqac'), as
        # DI-engine's 'sac' does; Discrete multi-agent actions: policy type 'discrete_sac'.
        multi_agent=False,
        # ContinuousQAC kwargs: obs_shape, action_shape, twin_critic, actor/critic_head_hidden_size, _layer_num, ...
        model=dict(twin_critic=True, action_space="reparameterization"),
        learn=dict(
            # Gradient steps per collect call (read by the pipeline).
            update_per_collect=1,
            # Samples per gradient step (read by the pipeline).
            batch_size=256,
            # Adam learning rate of the critics.
            learning_rate_q=3e-4,
            # Adam learning rate of the actor.
            learning_rate_policy=3e-4,
            # Adam learning rate of log(alpha) (auto_alpha only).
            learning_rate_alpha=3e-4,
            # Soft target update rate: target <- (1 - theta) * target + theta * online after every step.
            target_theta=0.005,
            # Discount factor gamma.
            discount_factor=0.99,
            # Entropy temperature: fixed value, or the initial value when auto_alpha.
            alpha=0.2,
            # Learn alpha so the policy's entropy tracks target_entropy.
            auto_alpha=True,
            # Accepted for DI-engine configs; ignored: ding always learns log(alpha) (alpha stays positive).
            log_space=True,
            # Entropy the temperature aims at; None = -(number of action dimensions).
            target_entropy=None,
            # Treat every transition as non-terminal (always bootstrap). Time-limit truncation never needs this: it
            # is already bootstrapped.
            ignore_done=False,
            # Accepted for DI-engine configs; ignored (layers keep torch's default initialisation).
            init_w=3e-3,
            # Accepted for DI-engine's MuJoCo files; must be True: ding's SAC always samples its actions with the
            # reparameterisation trick (the actor's gradient goes through the sampled action).
            reparameterization=True,
        ),
        collect=dict(
            # Samples per collect call (read by the collector).
            n_sample=1,
            # SAC trains on single transitions: must be 1.
            unroll_len=1,
            # Accepted for DI-engine configs; ignored (collect outputs hold only the action).
            collector_logit=False,
        ),
        # Accepted for DI-engine configs (its files give an empty command section); ignored: SAC's command mode
        # has nothing to set.
        command=dict(),
        other=dict(
            # Replay buffer config (merged with the buffer's defaults by compile_config).
            replay_buffer=dict(replay_buffer_size=1000000),
        ),
    )

    config_ranges = {
        "nstep": at_least(1, integer=True),
        "learn.update_per_collect": at_least(1, integer=True),
        "learn.batch_size": at_least(1, integer=True),
        "learn.learning_rate_q": greater_than(0),
        "learn.learning_rate_policy": greater_than(0),
        "learn.learning_rate_alpha": greater_than(0),
        "learn.target_theta": between(0, 1),
        "learn.discount_factor": between(0, 1),
        "learn.alpha": greater_than(0),
        "collect.n_sample": at_least(1, integer=True),
    }

    action_space_types = (gym.spaces.Box,)
    action_bounds = ACTION_BOUNDS

    _model: ContinuousQAC  # or a model with its interface (actor, critic, compute_actor, compute_critic)

    def __new__(cls, cfg: Mapping[str, Any] | None = None, *args: Any, **kwargs: Any) -> SACPolicy:
        if cls is SACPolicy and cfg is not None and cfg.get("multi_agent"):  # DI-engine's switch to multi-agent SAC
            from .masac_continuous import ContinuousMASACPolicy

            return super().__new__(ContinuousMASACPolicy)
        return super().__new__(cls)

    def default_model(self) -> tuple[str, list[str]]:
        return "continuous_qac", ["ding.model.template.qac"]

    def _check_common(self) -> None:
        if not self._cfg.learn.reparameterization:
            raise ConfigError("policy.learn.reparameterization=False: ding's SAC always uses the reparameterisation "
                              "trick; set it to True (or leave it out)")
        if int(self._cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len: SAC trains on single transitions, so it must be 1 "
                              f"(got {self._cfg.collect.unroll_len})")
        check_actor_kind(self._model, "reparameterization", "SACPolicy")
        self._set_train = ModeSwitch(self._model)

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        self._check_common()
        learn = self._cfg.learn
        self._gamma = float(learn.discount_factor)
        self._nstep = int(self._cfg.nstep)
        self._theta = float(learn.target_theta)
        self._ignore_done = bool(learn.ignore_done)
        self._priority = bool(self._cfg.priority)
        self._priority_IS_weight = bool(self._cfg.priority_IS_weight)
        self._optimizer_q = build_adam(self._model.critic, learn.learning_rate_q)
        self._optimizer_policy = build_adam(self._model.actor, learn.learning_rate_policy)
        self._target_model = frozen_copy(self._model)
        self._polyak = PolyakUpdate(self._target_model, self._model)
        self._critics_fixed = HeldFixed(self._model.critic)
        self._auto_alpha = bool(learn.auto_alpha)
        self._log_alpha = torch.tensor([math.log(learn.alpha)], device=self._device, requires_grad=self._auto_alpha)
        self._optimizer_alpha = make_adam([self._log_alpha], lr=learn.learning_rate_alpha) if self._auto_alpha else None
        n_actions = model_action_shape(self._model, self._cfg.model.get("action_shape"))
        self._target_entropy = -float(n_actions) if learn.target_entropy is None else float(learn.target_entropy)

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        """One SAC step: critics, then actor, then temperature, then the Polyak step of the target networks."""
        b = collate_qac_batch(data, self._device, ignore_done=self._ignore_done,
                              use_is_weight=self._priority_IS_weight, where="SACPolicy")
        self._set_train(True)
        alpha = self._log_alpha.detach().exp()
        # critics: regress every Q_i(s, a) on r + gamma * (min_i Q'_i(s', a') - alpha * log pi(a'|s')), a' ~ pi(.|s')
        with torch.no_grad():
            next_action, next_log_prob = self._sample(b.next_obs)
            next_q = self._target_model.compute_critic({"obs": b.next_obs, "action": next_action})["q_value"]
            target = qac_td_target(b.reward, next_q, b.done, self._gamma, self._nstep, b.value_gamma,
                                   next_log_prob, alpha)
        q = self._model.compute_critic({"obs": b.obs, "action": b.action})["q_value"]
        loss_q, td_error = critic_loss(q, target, b.weight)
        optimizer_step(self._optimizer_q, loss_q)
        # actor: minimise alpha * log pi(a|s) - min_i Q_i(s, a), a ~ pi(.|s) reparameterised (critics held fixed)
        action, log_prob = self._sample(b.obs)
        with self._critics_fixed:
            q_pi = min_q(self._model.compute_critic({"obs": b.obs, "action": action})["q_value"])
        loss_policy = (alpha * log_prob - q_pi).mean()
        optimizer_step(self._optimizer_policy, loss_policy)
        # temperature: raise alpha when the entropy -log pi is below target_entropy, lower it when above
        if self._auto_alpha:
            assert self._optimizer_alpha is not None  # built in _init_learn when auto_alpha
            optimizer_step(self._optimizer_alpha, sac_temperature_loss(self._log_alpha, log_prob, self._target_entropy))
        self._polyak.update(self._theta)

        output = {
            "cur_lr_q": self._optimizer_q.param_groups[0]["lr"],
            "critic_loss": loss_q.item(),
            "policy_loss": loss_policy.item(),
            "alpha": alpha.item(),
            "entropy": -log_prob.detach().mean().item(),
            "q_value": min_q(q).detach().mean().item(),
            "td_error": td_error.abs().mean().item(),
        }
        if self._priority:
            output["priority"] = td_error.abs().cpu().numpy()
        return output

    def _sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, sigma = self._model.compute_actor(obs)["logit"]
        return squashed_gaussian_sample(mu, sigma)

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr_q", "critic_loss", "policy_loss", "alpha", "entropy", "q_value", "td_error"]

    def _state_dict_learn(self) -> dict[str, Any]:
        """Everything an exact resume needs: both networks, the three optimizers and log(alpha)."""
        state = {
            "model": self._model.state_dict(),
            "target_model": self._target_model.state_dict(),
            "optimizer_q": self._optimizer_q.state_dict(),
            "optimizer_policy": self._optimizer_policy.state_dict(),
            "log_alpha": self._log_alpha.detach(),
        }
        if self._optimizer_alpha is not None:
            state["optimizer_alpha"] = self._optimizer_alpha.state_dict()
        return state

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        """Restore what :meth:`_state_dict_learn` saved. Only ``'model'`` is required: without ``'target_model'``
        the target becomes a copy of the model, missing optimizers and ``log_alpha`` start fresh."""
        load_model_state(self._model, state_dict, "model")
        if "target_model" in state_dict:
            load_model_state(self._target_model, state_dict, "target_model")
        else:
            hard_update(self._target_model, self._model)
        for key, optimizer in (("optimizer_q", self._optimizer_q), ("optimizer_policy", self._optimizer_policy),
                               ("optimizer_alpha", self._optimizer_alpha)):
            if key in state_dict and optimizer is not None:
                load_optimizer_state(optimizer, state_dict[key])
        if "log_alpha" in state_dict:
            with torch.no_grad():
                self._log_alpha.copy_(torch.as_tensor(state_dict["log_alpha"]).reshape(1))

    # ------------------------------------------------------------------ collect
    def _init_collect(self) -> None:
        self._check_common()
        self._nstep = int(self._cfg.nstep)
        self._gamma = float(self._cfg.learn.discount_factor)
        self._obs_shape = model_obs_shape(self._model)

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        """Actions sampled from the squashed Gaussian (torch's global RNG): ``{env_id: {'action': float32 (A,)}}``."""
        if not data:
            return {}
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, "SACPolicy collect_mode.forward")
        self._set_train(False)
        with torch.inference_mode():
            mu, sigma = self._model.compute_actor(obs)["logit"]
            action = squashed_gaussian_sample(mu, sigma)[0].cpu().numpy()
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return step_transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return qac_train_samples(transitions, self._nstep, self._gamma)

    # ------------------------------------------------------------------ eval
    def _init_eval(self) -> None:
        check_actor_kind(self._model, "reparameterization", "SACPolicy")
        self._set_train = ModeSwitch(self._model)
        self._obs_shape = model_obs_shape(self._model)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """The deterministic action ``tanh(mu)``, same format as collect."""
        if not data:
            return {}
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, "SACPolicy eval_mode.forward")
        self._set_train(False)
        with torch.inference_mode():
            action = squashed_gaussian_mode(self._model.compute_actor(obs)["logit"][0]).cpu().numpy()
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}


# DI-engine registers a command-mode twin 'sac_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("sac_command", SACPolicy)
