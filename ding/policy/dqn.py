"""DQN: double Q-learning with a target network, dueling model, n-step returns and prioritized replay."""
from __future__ import annotations

import copy
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
import torch

from ding.config.ranges import at_least, between, greater_than, one_of
from ding.model import hard_update, soft_update
from ding.rl_utils import (
    EPSILON_SCHEDULE_TYPES,
    get_epsilon_greedy_fn,
    get_nstep_return_data,
    q_nstep_td_data,
    q_nstep_td_error,
)
from ding.torch_utils import obs_to_float
from ding.utils import POLICY_REGISTRY, ConfigError
from ding.utils.data import SAMPLE_BATCH_TYPES, stack_field

from .base_policy import Policy, load_model_state, load_optimizer_state
from .common_utils import batch_obs, build_adam, model_obs_shape, step_transition

_SAMPLE_KEYS = ("obs", "action", "reward", "next_obs", "done")


@POLICY_REGISTRY.register("dqn")
class DQNPolicy(Policy):
    """Double DQN (the online network picks the next action, the target network values it).

    Dueling comes from the model (``model.dueling``), n-step returns from ``nstep``, prioritized replay from
    ``priority`` / ``priority_IS_weight``. Exploration is epsilon-greedy; epsilon comes from ``command_mode``.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    # ding's numpy data convention (ding/policy/tensor_io.py): the views are the bound methods themselves
    tensor_io = False
    config = dict(
        type="dqn",
        # Whether the learner returns per-sample priorities (|TD error|) for a prioritized replay buffer.
        priority=False,
        # Whether to weight each sample's loss by the buffer's importance-sampling weight 'IS'.
        priority_IS_weight=False,
        # Discount factor gamma.
        discount_factor=0.97,
        # n of the n-step return (1 = one-step TD).
        nstep=1,
        # DQN model kwargs, e.g. obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True.
        model=dict(),
        learn=dict(
            # Gradient steps per collect call (read by the pipeline).
            update_per_collect=3,
            # Samples per gradient step (read by the pipeline).
            batch_size=64,
            # Adam learning rate.
            learning_rate=0.001,
            # Hard target update: copy the online net every this many gradient steps. 0 or None -> soft update.
            target_update_freq=100,
            # Soft target update rate (target <- (1 - theta) * target + theta * online each step), used only when
            # target_update_freq is 0 or None.
            target_theta=0.005,
            # Treat every transition as non-terminal (always bootstrap). Time-limit truncation never needs this: it
            # is already bootstrapped.
            ignore_done=False,
        ),
        collect=dict(
            # Samples per collect call (read by the collector).
            n_sample=8,
            # DQN trains on single transitions: must be 1.
            unroll_len=1,
        ),
        other=dict(
            # Epsilon-greedy schedule over collected env steps: type 'exp' or 'linear'.
            eps=dict(type="exp", start=0.95, end=0.1, decay=10000),
            # Replay buffer config (merged with the buffer's defaults by compile_config).
            replay_buffer=dict(replay_buffer_size=10000),
        ),
    )

    config_ranges = {
        "discount_factor": between(0, 1),
        "nstep": at_least(1, integer=True),
        "learn.update_per_collect": at_least(1, integer=True),
        "learn.batch_size": at_least(1, integer=True),
        "learn.learning_rate": greater_than(0),
        "learn.target_update_freq": at_least(0, integer=True),
        "learn.target_theta": between(0, 1),
        "collect.n_sample": at_least(1, integer=True),
        "other.eps.type": one_of(*EPSILON_SCHEDULE_TYPES),
        "other.eps.start": between(0, 1),
        "other.eps.end": between(0, 1),
        "other.eps.decay": greater_than(0),
    }

    action_space_types = (gym.spaces.Discrete,)

    def default_model(self) -> tuple[str, list[str]]:
        return "dqn", ["ding.model.template.q_learning"]

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._gamma = float(self._cfg.discount_factor)
        self._nstep = int(self._cfg.nstep)
        if self._nstep < 1:
            raise ConfigError(f"policy.nstep: must be >= 1, got {self._cfg.nstep}")
        self._priority = bool(self._cfg.priority)
        self._priority_IS_weight = bool(self._cfg.priority_IS_weight)
        self._ignore_done = bool(learn.ignore_done)
        self._target_update_freq = int(learn.target_update_freq or 0)
        self._target_theta = float(learn.target_theta)
        if self._target_update_freq < 0:
            raise ConfigError(f"policy.learn.target_update_freq: must be >= 0 (0 or None = soft update), "
                              f"got {learn.target_update_freq}")
        if not self._target_update_freq and not 0.0 < self._target_theta <= 1.0:
            raise ConfigError(f"policy.learn.target_theta: must be in (0, 1] for soft target updates "
                              f"(target_update_freq is {learn.target_update_freq!r}), got {learn.target_theta}")
        self._optimizer = build_adam(self._model, learn.learning_rate)
        self._target_model = copy.deepcopy(self._model)
        for p in self._target_model.parameters():
            p.requires_grad_(False)
        self._learn_step = 0

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        """One double-DQN gradient step on a list of samples (from the buffer); returns floats to log and, when
        ``priority``, ``'priority'``: per-sample |TD error| (numpy float32, same order as ``data``)."""
        batch = self._collate(data)
        self._set_train(True)
        q = self._model(batch["obs"])["logit"]
        with torch.no_grad():
            next_q_target = self._target_model(batch["next_obs"])["logit"]
            next_action = self._model(batch["next_obs"])["logit"].argmax(dim=1)
        done = torch.zeros_like(batch["done"]) if self._ignore_done else batch["done"]
        reward = batch["reward"]
        if reward.dim() == 2:  # (B, nstep) -> (nstep, B), the layout q_nstep_td_error expects
            reward = reward.t()
        td_data = q_nstep_td_data(q, next_q_target, batch["action"], next_action, reward, done, batch.get("IS"))
        loss, td_error = q_nstep_td_error(td_data, self._gamma, self._nstep, value_gamma=batch.get("value_gamma"))

        self._optimize(loss)

        abs_td = td_error.abs()
        output = {
            "cur_lr": self._optimizer.param_groups[0]["lr"],
            "total_loss": loss.item(),
            "q_value": q.detach().mean().item(),
            "td_error": abs_td.mean().item(),
        }
        if self._priority:
            output["priority"] = abs_td.cpu().numpy()
        return output

    def _optimize(self, loss: torch.Tensor) -> None:
        """One gradient step on ``loss``, then the target network's hard (every ``target_update_freq`` steps) or soft
        update."""
        self._optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._optimizer.step()
        self._learn_step += 1
        if self._target_update_freq:
            if self._learn_step % self._target_update_freq == 0:
                hard_update(self._target_model, self._model)
        else:
            soft_update(self._target_model, self._model, self._target_theta)

    def _collate(self, data: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        """Stack only the fields the loss reads (one stack each), on the policy's device."""
        if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
            got = "an empty list" if isinstance(data, SAMPLE_BATCH_TYPES) else type(data).__name__
            raise ValueError(f"{type(self).__name__} learn_mode.forward: expected a non-empty list of samples, "
                             f"got {got}")
        keys = list(_SAMPLE_KEYS)
        if "value_gamma" in data[0]:
            keys.append("value_gamma")
        if self._priority_IS_weight:
            keys.append("IS")
        missing = [k for k in keys if k not in data[0]]
        if missing:
            hint = (" ('IS' comes from a prioritized buffer: set policy.priority=True and use the 'advanced' buffer, "
                    "or set policy.priority_IS_weight=False)" if "IS" in missing else
                    " (samples must come from DQN's collect_mode.process_transition / get_train_sample)")
            raise ValueError(f"{type(self).__name__} learn_mode.forward: samples lack key(s) {missing}; they have "
                             f"{sorted(data[0].keys())}{hint}")
        batch = {k: stack_field(data, k) for k in keys}
        if batch["done"].dtype != torch.bool:
            batch["done"] = batch["done"].bool()
        if batch["action"].dim() > 1:
            batch["action"] = batch["action"].reshape(-1)
        if self._device.type != "cpu":
            batch = {k: v.to(self._device) for k, v in batch.items()}
        batch["obs"], batch["next_obs"] = obs_to_float(batch["obs"]), obs_to_float(batch["next_obs"])  # on the device
        return batch

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "q_value", "td_error"]

    def _state_dict_learn(self) -> dict[str, Any]:
        """``{'model', 'target_model', 'optimizer', 'learn_step'}`` (tensors by reference, like torch)."""
        return {
            "model": self._model.state_dict(),
            "target_model": self._target_model.state_dict(),
            "optimizer": self._optimizer.state_dict(),
            "learn_step": self._learn_step,
        }

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        """Restore exactly what :meth:`_state_dict_learn` saved. Only ``'model'`` is required: without
        ``'target_model'`` the target becomes a copy of the model, without ``'optimizer'`` Adam starts fresh."""
        load_model_state(self._model, state_dict, "model")
        if "target_model" in state_dict:
            load_model_state(self._target_model, state_dict, "target_model")
        else:
            hard_update(self._target_model, self._model)
        if "optimizer" in state_dict:
            load_optimizer_state(self._optimizer, state_dict["optimizer"])
        self._learn_step = int(state_dict.get("learn_step", 0))

    # ------------------------------------------------------------------ collect
    def _init_collect(self) -> None:
        self._nstep = int(self._cfg.nstep)
        self._gamma = float(self._cfg.discount_factor)
        if int(self._cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len: DQN trains on single transitions, so it must be 1 "
                              f"(got {self._cfg.collect.unroll_len})")
        self._obs_shape = model_obs_shape(self._model)

    def _forward_collect(self, data: dict[int, Any], eps: float | None = None) -> dict[int, dict[str, Any]]:
        """Epsilon-greedy actions: ``{env_id: {'action': int64 array (), 'logit': float32 (n_actions,)}}``.

        Exploration draws from numpy's global RNG (seeded by ``set_pkg_seed``, captured by ``get_rng_state``).
        """
        eps = self._check_eps(eps)
        if not data:
            return {}
        env_ids, logit = self._q_values(data, f"{type(self).__name__} collect_mode.forward")
        action = epsilon_greedy(logit, eps)
        # action[i] is an np.int64 scalar (shape (), dtype int64): cheaper to make and to hand to env.step than a
        # 0-d array view, and it collates the same way.
        return {env_id: {"action": action[i], "logit": logit[i]} for i, env_id in enumerate(env_ids)}

    def _check_eps(self, eps: float | None) -> float:
        """``eps`` itself; a missing one is refused."""
        if eps is None:
            raise ValueError(f"{type(self).__name__} collect_mode.forward: pass eps=<float> (the collector's "
                             "policy_kwargs, usually command_mode.get_setting_collect(...)['eps'])")
        return eps

    def _q_values(self, data: dict[int, Any], where: str) -> tuple[list[int], np.ndarray]:
        """One stacked forward of all envs' observations -> (env_ids, Q-values as a numpy (B, A) array)."""
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, where)
        self._set_train(False)
        with torch.inference_mode():
            logit = self._model(obs)["logit"]
        return env_ids, logit.cpu().numpy()

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        """``{'obs', 'next_obs', 'action', 'reward', 'done', 'truncated'}`` (:func:`step_transition`)."""
        return step_transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``nstep == 1``: the transitions as they are. ``nstep > 1``: n-step samples for the leading transitions
        whose window is complete (see ``ding.rl_utils.get_nstep_return_data`` and docs/policies.md)."""
        if self._nstep == 1:
            return transitions
        return get_nstep_return_data(transitions, self._nstep, self._gamma)

    # ------------------------------------------------------------------ eval
    def _init_eval(self) -> None:
        self._obs_shape = model_obs_shape(self._model)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """Greedy actions, same format as collect."""
        if not data:
            return {}
        env_ids, logit = self._q_values(data, f"{type(self).__name__} eval_mode.forward")
        action = logit.argmax(axis=1)
        # action[i] is an np.int64 scalar (shape (), dtype int64): cheaper to make and to hand to env.step than a
        # 0-d array view, and it collates the same way.
        return {env_id: {"action": action[i], "logit": logit[i]} for i, env_id in enumerate(env_ids)}

    # ------------------------------------------------------------------ command
    def _init_command(self) -> None:
        eps = self._cfg.other.eps
        self._epsilon_greedy = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type)

    def _get_setting_collect(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        """``{'eps': eps(collector_envstep)}``."""
        if "collector_envstep" not in command_info:
            raise ValueError(f"{type(self).__name__} command_mode.get_setting_collect: command_info needs "
                             f"'collector_envstep' (got keys {sorted(command_info)})")
        return {"eps": self._epsilon_greedy(command_info["collector_envstep"])}

    # ------------------------------------------------------------------ shared
    def _set_train(self, training: bool) -> None:
        if self._model.training != training:
            self._model.train(training)


def epsilon_greedy(logit: np.ndarray, eps: float) -> np.ndarray:
    """Greedy actions of (B, A) Q-values, each replaced by a uniform random action with probability ``eps``.

    One call to numpy's global RNG (seeded by ``set_pkg_seed``, captured by ``get_rng_state``): the first B numbers
    decide who explores, the next B pick their action. A plain loop over B entries beats 5 numpy calls for the env
    counts collectors use (B ~ 8-64).
    """
    action = logit.argmax(axis=1)
    if eps > 0:
        batch_size, n_actions = logit.shape
        u = np.random.random_sample(2 * batch_size).tolist()
        for i in range(batch_size):
            if u[i] < eps:
                action[i] = int(u[batch_size + i] * n_actions)
    return action


# DI-engine's config files name the command-mode twin 'dqn_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("dqn_command", DQNPolicy)
