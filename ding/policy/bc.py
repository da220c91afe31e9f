"""BC: behaviour cloning, supervised learning of the data's actions (discrete; continuous deterministic or Gaussian)."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F

from ding.config.ranges import at_least, greater_than, one_of
from ding.utils import POLICY_REGISTRY, ConfigError
from ding.utils.data import stack_field

from .base_policy import Policy
from .common_utils import batch_obs, model_obs_shape, step_transition
from .offline_utils import OFFLINE_COLLECT
from .qac_utils import ACTION_BOUNDS, ModeSwitch, optimizer_step


@POLICY_REGISTRY.register("bc")
class BehaviourCloningPolicy(Policy):
    """Behaviour cloning (DI-engine's ``bc``): cross-entropy on the data's actions (``continuous=False``), or for
    ``continuous=True`` the ``loss_type`` (L1 / MSE) of a deterministic actor (``model.action_space='regression'``)
    or the negative log-likelihood of a Gaussian one (``'reparameterization'``). Acts greedily (argmax / mean)."""

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)
    tensor_io = False
    config = dict(
        type="bc",
        # Continuous actions (model 'continuous_bc') or discrete ones (model 'discrete_bc').
        continuous=False,
        # Continuous, deterministic actor only: 'l1_loss' or 'mse_loss'.
        loss_type="l1_loss",
        # Accepted for DI-engine configs; the action shape comes from policy.model.action_shape.
        action_shape=None,
        model=dict(),
        learn=dict(
            # Samples per gradient step.
            batch_size=32,
            # Learning rate of the optimizer.
            learning_rate=1e-5,
            # 'SGD' (with momentum) or 'Adam' (AdamW when weight_decay is set).
            optimizer="SGD",
            momentum=0.9,
            weight_decay=1e-4,
            # Label smoothing of 0.1 on the cross-entropy (discrete only).
            ce_label_smooth=False,
            # Log the accuracy of the predicted actions on each batch (discrete only).
            show_accuracy=False,
            # DI-engine's learning-rate warm-up and step decay; only False is supported.
            lr_decay=False,
            # Passes over the data set (offline pipeline; max_train_iter also limits it).
            train_epoch=20,
            # Accepted for DI-engine configs (the offline pipeline has no collect step).
            update_per_collect=1,
        ),
        collect=dict(
            **OFFLINE_COLLECT,
            # Accepted for DI-engine configs; BC acts without noise.
            noise=False,
            noise_sigma=0.2,
            noise_range=dict(min=-0.5, max=0.5),
        ),
        eval=dict(),
    )
    config_ranges = {"learn.batch_size": at_least(1, integer=True), "learn.learning_rate": greater_than(0),
                     "learn.optimizer": one_of("SGD", "Adam"), "loss_type": one_of("l1_loss", "mse_loss"),
                     "learn.train_epoch": at_least(1, integer=True)}
    action_space_types = (gym.spaces.Discrete, gym.spaces.Box)
    action_bounds = ACTION_BOUNDS

    def default_model(self) -> tuple[str, list[str]]:
        return ("continuous_bc" if self._cfg.continuous else "discrete_bc"), ["ding.model.template.offline"]

    def _init_learn(self) -> None:
        learn = self._cfg.learn
        if learn.lr_decay:
            raise ConfigError("policy.learn.lr_decay=True: ding's BC has no learning-rate schedule; set it to False")
        params = self._model.parameters()
        if learn.optimizer == "SGD":
            self._optimizer: torch.optim.Optimizer = torch.optim.SGD(
                params, lr=learn.learning_rate, momentum=learn.momentum, weight_decay=learn.weight_decay or 0.0)
        elif learn.weight_decay is None:
            self._optimizer = torch.optim.Adam(params, lr=learn.learning_rate)
        else:
            self._optimizer = torch.optim.AdamW(params, lr=learn.learning_rate, weight_decay=learn.weight_decay)
        self._gaussian = getattr(self._model, "action_space", None) == "reparameterization"
        self._set_train = ModeSwitch(self._model)

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        obs = stack_field(data, "obs").float().to(self._device)
        action = stack_field(data, "action").to(self._device)
        self._set_train(True)
        out = self._model(obs)
        output: dict[str, Any] = {}
        if not self._cfg.continuous:
            logit, target = out["logit"], action.reshape(-1).long()
            loss = F.cross_entropy(logit, target, label_smoothing=0.1 if self._cfg.learn.ce_label_smooth else 0.0)
            if self._cfg.learn.show_accuracy:
                output["accuracy"] = (logit.argmax(-1) == target).float().mean().item()
        elif self._gaussian:
            mu, sigma = out["logit"]
            loss = -torch.distributions.Normal(mu, sigma).log_prob(action.float().reshape(mu.shape)).sum(-1).mean()
        else:
            pred = out["action"]
            fn = F.l1_loss if self._cfg.loss_type == "l1_loss" else F.mse_loss
            loss = fn(pred, action.float().reshape(pred.shape))
        optimizer_step(self._optimizer, loss)
        output.update({"cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": loss.item()})
        return output

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", *(["accuracy"] if self._cfg.learn.show_accuracy else [])]

    # ------------------------------------------------------------------ collect / eval: the greedy action
    def _init_collect(self) -> None:
        self._init_eval()

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        return self._forward_eval(data)

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return step_transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return transitions

    def _init_eval(self) -> None:
        self._obs_shape = model_obs_shape(self._model)
        self._set_train = ModeSwitch(self._model)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        if not data:
            return {}
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, "BehaviourCloningPolicy eval_mode.forward")
        self._set_train(False)
        with torch.inference_mode():
            out = self._model(obs)
            if not self._cfg.continuous:
                action = out["logit"].argmax(-1).cpu().numpy()
            elif "logit" in out:
                action = out["logit"][0].clamp(*ACTION_BOUNDS).cpu().numpy()
            else:
                action = out["action"].cpu().numpy()
        if self._cfg.continuous:
            action = action.reshape(len(env_ids), -1)  # (B, action_shape), also for one action dimension
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}


POLICY_REGISTRY.register("bc_command", BehaviourCloningPolicy)
