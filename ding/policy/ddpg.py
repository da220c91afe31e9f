"""DDPG: a deterministic actor and a Q critic with target networks; TD3 (td3.py) is the same update with twin
critics, target policy smoothing and delayed actor updates switched on."""
from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np
import torch

from ding.config.ranges import at_least, between, greater_than
from ding.model import ContinuousQAC, hard_update
from ding.rl_utils import critic_loss, min_q, qac_td_target, target_policy_smoothing
from ding.utils import POLICY_REGISTRY, ConfigError

from .base_policy import Policy, load_model_state, load_optimizer_state
from .common_utils import batch_obs, build_adam, model_obs_shape, step_transition
from .qac_utils import (
    ACTION_BOUNDS,
    HeldFixed,
    ModeSwitch,
    PolyakUpdate,
    QACBatch,
    check_actor_kind,
    collate_qac_batch,
    frozen_copy,
    optimizer_step,
    qac_train_samples,
)


@POLICY_REGISTRY.register("ddpg")
class DDPGPolicy(Policy):
    """DDPG (Lillicrap et al. 2016) for Box actions in [-1, 1], with TD3's three changes available as switches.

    Critics regress on ``r + gamma * min_i Q'_i(s', mu'(s') [+ clipped noise])``; every ``actor_update_freq``
    critic steps the actor ascends ``Q_1(s, mu(s))`` and the target networks move towards the online ones. Collect
    adds Gaussian noise (``collect.noise_sigma``) clipped to the action bounds; eval acts with ``mu(s)``.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    # ding's numpy data convention (ding/policy/tensor_io.py): the views are the bound methods themselves
    tensor_io = False
    config = dict(
        type="ddpg",
        # Env steps collected with uniformly random actions before training starts (read by the pipeline).
        random_collect_size=25000,
        # n of the n-step return (1 = one-step TD).
        nstep=1,
        # Accepted for DI-engine configs; ignored (transitions always hold what DDPG needs).
        transition_with_policy_data=False,
        # Accepted for DI-engine configs; must be 'continuous' (ding has no hybrid-action DDPG).
        action_space="continuous",
        # Accepted for DI-engine configs; must be False (rewards are used as they are).
        reward_batch_norm=False,
        # Accepted for DI-engine configs; must be False (ding has no multi-agent DDPG).
        multi_agent=False,
        # ContinuousQAC kwargs: obs_shape, action_shape, twin_critic, actor/critic_head_hidden_size, _layer_num, ...
        model=dict(twin_critic=False, action_space="regression"),
        learn=dict(
            # Gradient steps per collect call (read by the pipeline).
            update_per_collect=1,
            # Samples per gradient step (read by the pipeline).
            batch_size=256,
            # Adam learning rate of the actor.
            learning_rate_actor=1e-3,
            # Adam learning rate of the critic(s).
            learning_rate_critic=1e-3,
            # Treat every transition as non-terminal (always bootstrap). Time-limit truncation never needs this: it
            # is already bootstrapped.
            ignore_done=False,
            # Soft target update rate: target <- (1 - theta) * target + theta * online, with every actor update.
            target_theta=0.005,
            # Discount factor gamma.
            discount_factor=0.99,
            # Critic steps per actor (and target) update: 1 for DDPG, 2 for TD3's delayed policy updates.
            actor_update_freq=1,
            # Target policy smoothing (TD3): add clipped Gaussian noise to the target actor's action.
            noise=False,
            # Standard deviation of the target smoothing noise (noise=True only).
            noise_sigma=0.2,
            # Clip range of the target smoothing noise (noise=True only).
            noise_range=dict(min=-0.5, max=0.5),
        ),
        collect=dict(
            # Samples per collect call (read by the collector).
            n_sample=1,
            # DDPG trains on single transitions: must be 1.
            unroll_len=1,
            # Standard deviation of the Gaussian exploration noise added to collect actions (then clipped to
            # [-1, 1]).
            noise_sigma=0.1,
        ),
        other=dict(
            # Replay buffer config (merged with the buffer's defaults by compile_config).
            replay_buffer=dict(replay_buffer_size=100000),
        ),
    )

    config_ranges = {
        "nstep": at_least(1, integer=True),
        "learn.update_per_collect": at_least(1, integer=True),
        "learn.batch_size": at_least(1, integer=True),
        "learn.learning_rate_actor": greater_than(0),
        "learn.learning_rate_critic": greater_than(0),
        "learn.target_theta": between(0, 1),
        "learn.discount_factor": between(0, 1),
        "learn.actor_update_freq": at_least(1, integer=True),
        "learn.noise_sigma": at_least(0),
        "collect.n_sample": at_least(1, integer=True),
        "collect.noise_sigma": at_least(0),
    }

    action_space_types = (gym.spaces.Box,)
    action_bounds = ACTION_BOUNDS

    _model: ContinuousQAC  # or a model with its interface (actor, critic, compute_actor, compute_critic)

    def default_model(self) -> tuple[str, list[str]]:
        return "continuous_qac", ["ding.model.template.qac"]

    def _check_common(self) -> None:
        name = type(self).__name__
        unsupported = {"action_space": "continuous", "reward_batch_norm": False, "multi_agent": False}
        for key, wanted in unsupported.items():
            if self._cfg[key] != wanted:
                raise ConfigError(f"policy.{key}: ding's {name} supports only {wanted!r}, got {self._cfg[key]!r}; "
                                  f"set policy.{key}={wanted!r}")
        if int(self._cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len: {name} trains on single transitions, so it must be 1 "
                              f"(got {self._cfg.collect.unroll_len})")
        check_actor_kind(self._model, "regression", name)
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
        self._actor_update_freq = int(learn.actor_update_freq)
        self._smoothing = (float(learn.noise_sigma), float(learn.noise_range.min), float(learn.noise_range.max)) \
            if learn.noise else None
        if self._smoothing is not None and not self._smoothing[1] <= 0 <= self._smoothing[2]:
            raise ConfigError(f"policy.learn.noise_range: min <= 0 <= max is needed, got {dict(learn.noise_range)}")
        self._optimizer_actor = build_adam(self._model.actor, learn.learning_rate_actor)
        self._optimizer_critic = build_adam(self._model.critic, learn.learning_rate_critic)
        self._target_model = frozen_copy(self._model)
        self._polyak = PolyakUpdate(self._target_model, self._model)
        self._critics_fixed = HeldFixed(self._model.critic)
        self._learn_step = 0

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        """One critic step; every ``actor_update_freq`` steps also one actor step and the target update."""
        b = collate_qac_batch(data, self._device, ignore_done=self._ignore_done,
                              use_is_weight=self._priority_IS_weight, where=type(self).__name__)
        self._set_train(True)
        # critics: regress every Q_i(s, a) on r + gamma * min_i Q'_i(s', a'), a' = mu'(s') (+ clipped noise: TD3)
        with torch.no_grad():
            next_action = self._target_model.compute_actor(b.next_obs)["action"]
            if self._smoothing is not None:
                next_action = target_policy_smoothing(next_action, *self._smoothing, *ACTION_BOUNDS)
            next_q = self._target_model.compute_critic({"obs": b.next_obs, "action": next_action})["q_value"]
            target = qac_td_target(b.reward, next_q, b.done, self._gamma, self._nstep, b.value_gamma)
        q = self._model.compute_critic({"obs": b.obs, "action": b.action})["q_value"]
        loss_critic, td_error = critic_loss(q, target, b.weight)
        optimizer_step(self._optimizer_critic, loss_critic)
        self._learn_step += 1
        output: dict[str, Any] = {"critic_loss": loss_critic.item(), "q_value": min_q(q).detach().mean().item(),
                                  "td_error": td_error.abs().mean().item()}
        # actor (delayed): ascend Q_1(s, mu(s)) with the critics held fixed, then move the targets
        if self._learn_step % self._actor_update_freq == 0:
            loss_actor = self._actor_loss(b)
            optimizer_step(self._optimizer_actor, loss_actor)
            self._polyak.update(self._theta)
            output["actor_loss"] = loss_actor.item()
        if self._priority:
            output["priority"] = td_error.abs().cpu().numpy()
        return output

    def _actor_loss(self, b: QACBatch) -> torch.Tensor:
        """DDPG's actor loss ``-Q_1(s, mu(s))``, the critics held fixed (TD3+BC adds its behaviour-cloning term)."""
        with self._critics_fixed:
            q_mu = self._model.compute_critic({"obs": b.obs, "action": self._model.compute_actor(b.obs)["action"]})
        return -_first(q_mu["q_value"]).mean()

    def _monitor_vars_learn(self) -> list[str]:
        return ["critic_loss", "actor_loss", "q_value", "td_error"]

    def _state_dict_learn(self) -> dict[str, Any]:
        """Everything an exact resume needs: both networks, both optimizers and the step count (actor delay)."""
        return {
            "model": self._model.state_dict(),
            "target_model": self._target_model.state_dict(),
            "optimizer_actor": self._optimizer_actor.state_dict(),
            "optimizer_critic": self._optimizer_critic.state_dict(),
            "learn_step": self._learn_step,
        }

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        """Restore what :meth:`_state_dict_learn` saved. Only ``'model'`` is required: without ``'target_model'``
        the target becomes a copy of the model, missing optimizers start fresh."""
        load_model_state(self._model, state_dict, "model")
        if "target_model" in state_dict:
            load_model_state(self._target_model, state_dict, "target_model")
        else:
            hard_update(self._target_model, self._model)
        for key, optimizer in (("optimizer_actor", self._optimizer_actor),
                               ("optimizer_critic", self._optimizer_critic)):
            if key in state_dict:
                load_optimizer_state(optimizer, state_dict[key])
        self._learn_step = int(state_dict.get("learn_step", 0))

    # ------------------------------------------------------------------ collect
    def _init_collect(self) -> None:
        self._check_common()
        self._nstep = int(self._cfg.nstep)
        self._gamma = float(self._cfg.learn.discount_factor)
        self._noise_sigma = float(self._cfg.collect.noise_sigma)
        self._obs_shape = model_obs_shape(self._model)

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        """``mu(s)`` plus Gaussian noise (numpy's global RNG), clipped to [-1, 1]: ``{env_id: {'action': (A,)}}``."""
        if not data:
            return {}
        env_ids, action = self._actions(data, "collect_mode")
        if self._noise_sigma > 0:
            action = action + np.random.normal(0.0, self._noise_sigma, size=action.shape).astype(np.float32)
            np.clip(action, *ACTION_BOUNDS, out=action)
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}

    def _actions(self, data: dict[int, Any], mode: str) -> tuple[list[int], np.ndarray]:
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, f"{type(self).__name__} {mode}.forward")
        self._set_train(False)
        with torch.inference_mode():
            action = self._model.compute_actor(obs)["action"]
        return env_ids, action.cpu().numpy().reshape(len(env_ids), -1)

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return step_transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return qac_train_samples(transitions, self._nstep, self._gamma)

    # ------------------------------------------------------------------ eval
    def _init_eval(self) -> None:
        check_actor_kind(self._model, "regression", type(self).__name__)
        self._set_train = ModeSwitch(self._model)
        self._obs_shape = model_obs_shape(self._model)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """The deterministic action ``mu(s)``, same format as collect."""
        if not data:
            return {}
        env_ids, action = self._actions(data, "eval_mode")
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}


def _first(q: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
    """The first critic's values (TD3's actor follows Q_1 only)."""
    return q if isinstance(q, torch.Tensor) else q[0]


# DI-engine registers a command-mode twin 'ddpg_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("ddpg_command", DDPGPolicy)
