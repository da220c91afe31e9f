"""A2C (on-policy): one pass of advantage actor-critic updates over each collect's samples, GAE advantages."""
from __future__ import annotations

from typing import Any

from ding.config.ranges import at_least, greater_than
from ding.rl_utils import a2c_data, a2c_error
from ding.utils import POLICY_REGISTRY, ConfigError

from .actor_critic import ActorCriticPolicy, index_batch, minibatch_indices
from .common_utils import build_adam


@POLICY_REGISTRY.register("a2c")
class A2CPolicy(ActorCriticPolicy):
    """Synchronous advantage actor-critic on a ``VAC`` model, discrete or continuous actions.

    Each ``learn_mode.forward`` call computes GAE advantages and returns with the critic that collected the samples,
    then takes one gradient step per minibatch of ``batch_size`` (one pass, no reuse) and returns one log dict each.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    config = dict(
        type="a2c",
        learn=dict(
            # Accepted for DI-engine configs: the on-policy loop trains once per collect (1 only).
            update_per_collect=1,
            batch_size=64,
            learning_rate=1e-3,
            # Adam's betas and eps.
            betas=(0.9, 0.999),
            eps=1e-8,
            # Clip the gradients' global norm to this (None: no clipping).
            grad_norm=0.5,
            value_weight=0.5,
            entropy_weight=0.01,
            adv_norm=False,
        ),
        collect=dict(
            discount_factor=0.9,
        ),
    )
    config_ranges = {
        "learn.update_per_collect": at_least(1, integer=True),
        "learn.eps": greater_than(0),
        "learn.grad_norm": greater_than(0),
    }

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        if int(learn.update_per_collect) != 1:
            raise ConfigError(f"policy.learn.update_per_collect: A2C trains once on each collect's samples, so it must "
                              f"be 1 (got {learn.update_per_collect}); use policy.collect.n_sample to size an update")
        for key in ("priority", "priority_IS_weight"):
            if self._cfg.get(key):
                raise ConfigError(f"policy.{key}: True is not supported by A2C (no replay buffer); set it to False")
        self._init_gae()
        self._optimizer = build_adam(self._model, learn.learning_rate, betas=tuple(learn.betas), eps=learn.eps)

    def _forward_learn(self, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One gradient step per minibatch of one collect's samples; one log dict each."""
        learn = self._cfg.learn
        batch = self._collate(data, "A2CPolicy learn_mode.forward")
        _, batch["adv"], batch["return"] = self._gae_targets(batch)
        self._set_train(True)
        infos = []
        for idx in minibatch_indices(len(batch["reward"]), int(learn.batch_size)):
            mb = index_batch(batch, idx)
            out = self._model(mb["obs"], mode="compute_actor_critic")
            adv = mb["adv"]
            if learn.adv_norm and len(adv) > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            loss = a2c_error(a2c_data(out["logit"], mb["action"], out["value"], adv, mb["return"], None))
            total = loss.policy_loss + learn.value_weight * loss.value_loss - learn.entropy_weight * loss.entropy_loss
            self._optimizer.zero_grad(set_to_none=True)
            total.backward()
            grad_norm = self._clip_grad("clip_norm" if learn.grad_norm else None, learn.grad_norm)
            self._optimizer.step()
            infos.append({
                "cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": total.item(),
                "policy_loss": loss.policy_loss.item(), "value_loss": loss.value_loss.item(),
                "entropy_loss": loss.entropy_loss.item(), "adv_mean": mb["adv"].mean().item(),
                **({"grad_norm": grad_norm} if grad_norm is not None else {}),
            })
        return infos

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "policy_loss", "value_loss", "entropy_loss", "grad_norm"]


# DI-engine's config files name the command-mode twin 'a2c_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("a2c_command", A2CPolicy)
