"""PPO (on-policy): clipped surrogate, (clipped) value loss, entropy bonus, GAE recomputed every epoch."""
from __future__ import annotations

import math
from typing import Any, Mapping

import torch
import torch.nn as nn

from ding.config.ranges import at_least, greater_than, one_of
from ding.rl_utils import RunningMeanStd, ppo_data, ppo_error
from ding.utils import POLICY_REGISTRY, ConfigError

from .actor_critic import ActorCriticPolicy, index_batch, minibatch_indices
from .base_policy import load_model_state, load_optimizer_state
from .common_utils import build_adam

GRAD_CLIP_TYPES = ("clip_norm", "clip_value", None)


@POLICY_REGISTRY.register("ppo")
class PPOPolicy(ActorCriticPolicy):
    """PPO with discrete (categorical) or continuous (Gaussian) actions on a ``VAC`` model.

    Each ``learn_mode.forward`` call trains ``epoch_per_collect`` epochs over the collected samples in minibatches of
    ``batch_size``, recomputing advantages (GAE) and returns with the current critic at the start of every epoch
    (``recompute_adv``), and returns one log dict per minibatch (one train iteration each).
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    config = dict(
        type="ppo",
        # Recompute advantages and returns with the current critic at the start of every epoch (else once).
        recompute_adv=True,
        # Accepted for DI-engine configs: ding's PPO value target is always the GAE return (False only).
        nstep_return=False,
        # MAPPO: True builds ding.policy.mappo.MAPPOPolicy (a MAVAC model, per-agent data) in place of PPOPolicy.
        multi_agent=False,
        # Accepted for DI-engine configs; unused (transitions always keep the policy's logit and value).
        transition_with_policy_data=True,
        learn=dict(
            # Passes over the collected samples per collect.
            epoch_per_collect=10,
            # Accepted for DI-engine configs: loops built by hand (DI-engine's self-play and league demos) call
            # learner.train this many times per collect; the on-policy pipeline trains once per collect.
            update_per_collect=1,
            batch_size=64,
            learning_rate=3e-4,
            # None, or dict(epoch_num=N, min_lr_lambda=f): the learning rate falls linearly to f * lr over N
            # collects (learn_mode.forward calls), then stays there.
            lr_scheduler=None,
            value_weight=0.5,
            entropy_weight=0.0,
            # PPO's epsilon: the policy ratio is clipped to [1 - clip_ratio, 1 + clip_ratio].
            clip_ratio=0.2,
            # Clip the value loss: the new value may not profit from moving more than clip_ratio from the old.
            value_clip=True,
            # Dual clip (> 1) bounds the loss of negative advantages (None: off).
            dual_clip=None,
            adv_norm=True,
            # Normalise value targets by a running std of the returns (the critic predicts return / std).
            value_norm=True,
            # Orthogonal initialisation (policy output layer scaled 0.01, log-sigma -0.5) when learning starts.
            ppo_param_init=True,
            # Gradient clipping: 'clip_norm' (global norm), 'clip_value' (each element), or None.
            grad_clip_type="clip_norm",
            grad_clip_value=0.5,
            # Accepted for DI-engine configs (its MAPPO file sets it False); one process trains.
            multi_gpu=False,
        ),
        # Accepted for DI-engine configs (its MAPPO file sets them); the env counts are env.*_env_num.
        collect=dict(env_num=None),
        eval=dict(env_num=None),
    )
    config_ranges = {
        "learn.epoch_per_collect": at_least(1, integer=True),
        "learn.update_per_collect": at_least(1, integer=True),
        "learn.clip_ratio": greater_than(0),
        "learn.dual_clip": greater_than(1),
        "learn.grad_clip_type": one_of(*GRAD_CLIP_TYPES),
        "learn.grad_clip_value": greater_than(0),
    }

    def __new__(cls, cfg: Mapping[str, Any] | None = None, *args: Any, **kwargs: Any) -> PPOPolicy:
        if cls is PPOPolicy and cfg is not None and cfg.get("multi_agent"):  # DI-engine's switch to MAPPO
            from .mappo import MAPPOPolicy

            return super().__new__(MAPPOPolicy)
        return super().__new__(cls)

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        cfg, learn = self._cfg, self._cfg.learn
        for key in ("nstep_return", "priority", "priority_IS_weight"):
            if cfg.get(key):
                raise ConfigError(f"policy.{key}: True is not supported by ding's PPO; set it to False")
        self._init_gae()
        self._recompute_adv = bool(cfg.recompute_adv)
        self._epochs, self._batch_size = int(learn.epoch_per_collect), int(learn.batch_size)
        self._clip_ratio, self._dual_clip, self._value_clip = learn.clip_ratio, learn.dual_clip, learn.value_clip
        self._value_norm = RunningMeanStd() if learn.value_norm else None
        if learn.ppo_param_init:
            ppo_init(self._model)
        self._optimizer = build_adam(self._model, learn.learning_rate)
        self._lr_scheduler = _linear_lr(self._optimizer, learn.lr_scheduler)

    def _forward_learn(self, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``epoch_per_collect`` epochs of minibatch PPO updates on one collect's samples; one log dict each."""
        learn = self._cfg.learn
        batch = self._collate(data, "PPOPolicy learn_mode.forward")
        self._set_train(True)
        infos = []
        for epoch in range(self._epochs):
            if epoch == 0 or self._recompute_adv:
                self._set_targets(batch)
            for idx in minibatch_indices(len(batch["reward"]), self._batch_size):
                mb = index_batch(batch, idx)
                out = self._model(mb["obs"], mode="compute_actor_critic")
                adv = mb["adv"]
                if learn.adv_norm and len(adv) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                loss, info = ppo_error(ppo_data(out["logit"], mb["logit"], mb["action"], out["value"], mb["value_old"],
                                                adv, mb["return"], None),
                                       self._clip_ratio, self._value_clip, self._dual_clip)
                total = loss.policy_loss + learn.value_weight * loss.value_loss - learn.entropy_weight * \
                    loss.entropy_loss
                self._optimizer.zero_grad(set_to_none=True)
                total.backward()
                grad_norm = self._clip_grad(learn.grad_clip_type, learn.grad_clip_value)
                self._optimizer.step()
                infos.append({
                    "cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": total.item(),
                    "policy_loss": loss.policy_loss.item(), "value_loss": loss.value_loss.item(),
                    "entropy_loss": loss.entropy_loss.item(), "approx_kl": info.approx_kl, "clipfrac": info.clipfrac,
                    "adv_mean": mb["adv"].mean().item(), "value_mean": out["value"].mean().item(),
                    **({"grad_norm": grad_norm} if grad_norm is not None else {}),
                })
        if self._lr_scheduler is not None:
            self._lr_scheduler.step()
        return infos

    def _set_targets(self, batch: dict[str, Any]) -> None:
        """``value_old``, ``adv`` and ``return`` from the current critic; with value normalisation the critic
        predicts ``return / std`` (std of all returns so far, updated after the targets are set)."""
        scale = self._value_norm.std if self._value_norm is not None else 1.0
        value, adv, ret = self._gae_targets(batch, scale)
        batch["value_old"], batch["adv"], batch["return"] = value, adv, ret / scale
        if self._value_norm is not None:
            self._value_norm.update(ret.cpu().numpy())

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "policy_loss", "value_loss", "entropy_loss", "approx_kl", "clipfrac"]

    def _state_dict_learn(self) -> dict[str, Any]:
        state = {"model": self._model.state_dict(), "optimizer": self._optimizer.state_dict()}
        if self._value_norm is not None:
            state["value_norm"] = self._value_norm.state_dict()
        if self._lr_scheduler is not None:
            state["lr_scheduler"] = self._lr_scheduler.state_dict()
        return state

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        load_model_state(self._model, state_dict, "model")
        if "optimizer" in state_dict:
            load_optimizer_state(self._optimizer, state_dict["optimizer"])
        if self._value_norm is not None and "value_norm" in state_dict:
            self._value_norm.load_state_dict(state_dict["value_norm"])
        if self._lr_scheduler is not None and "lr_scheduler" in state_dict:
            self._lr_scheduler.load_state_dict(state_dict["lr_scheduler"])


def ppo_init(model: nn.Module) -> None:
    """Orthogonal weights (gain sqrt(2)) and zero biases for every Linear layer; the policy's output layer with gain
    0.01 (near-uniform first actions), the value output with gain 1, a learned log-sigma starts at -0.5."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.orthogonal_(m.weight, gain=math.sqrt(2))
            nn.init.zeros_(m.bias)
    actor_head, critic_head = getattr(model, "actor_head", None), getattr(model, "critic_head", None)
    policy_out = getattr(actor_head, "mu", None) or _last_linear(actor_head)
    if policy_out is not None:
        nn.init.orthogonal_(policy_out.weight, gain=0.01)
    value_out = _last_linear(critic_head)
    if value_out is not None:
        nn.init.orthogonal_(value_out.weight, gain=1.0)
    log_sigma = getattr(actor_head, "log_sigma", None)
    if isinstance(log_sigma, nn.Parameter):
        nn.init.constant_(log_sigma, -0.5)


def _last_linear(module: nn.Module | None) -> nn.Linear | None:
    layers = [m for m in module.modules() if isinstance(m, nn.Linear)] if module is not None else []
    return layers[-1] if layers else None


def _linear_lr(optimizer: torch.optim.Optimizer, cfg: Any) -> torch.optim.lr_scheduler.LambdaLR | None:
    """DI-engine's ``lr_scheduler=dict(epoch_num, min_lr_lambda)``: linear decay over ``epoch_num`` collects."""
    if cfg is None:
        return None
    try:
        epoch_num, min_lr = int(cfg["epoch_num"]), float(cfg["min_lr_lambda"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"policy.learn.lr_scheduler: expected None or dict(epoch_num=<int>, min_lr_lambda=<float>), "
                          f"got {cfg!r}") from None
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda n: max(1.0 - n * (1.0 - min_lr) / max(epoch_num, 1), min_lr))


# DI-engine's config files name the command-mode twin 'ppo_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("ppo_command", PPOPolicy)
