"""IQL: implicit Q-learning (Kostrikov et al. 2021): expectile value, TD critics on it, advantage-weighted actor."""
from __future__ import annotations

from typing import Any, Mapping

import torch

from ding.config.ranges import between, greater_than
from ding.model.common import mlp
from ding.rl_utils import advantage_weights, critic_loss, expectile_loss, min_q, qac_td_target
from ding.utils import POLICY_REGISTRY

from .base_policy import load_model_state, load_optimizer_state
from .common_utils import build_adam
from .offline_utils import OFFLINE_COLLECT, OFFLINE_LEARN
from .qac_utils import HeldFixed, PolyakUpdate, collate_qac_batch, frozen_copy, optimizer_step
from .sac import SACPolicy

_ATANH_CLIP = 1.0 - 1e-4  # data actions at +-1 would have an infinite pre-tanh value


@POLICY_REGISTRY.register("iql")
class IQLPolicy(SACPolicy):
    """IQL on a ``continuous_qac`` model with a Gaussian actor (``action_space='reparameterization'``) and a state
    value network V(s) kept by the policy. Per step:

    - V: expectile regression (``expectile``) on ``min_i Q'_i(s, a)`` of the target critics, data actions only;
    - Q: regress on ``r + gamma * (1 - done) * V(s')``;
    - actor: maximise ``exp(beta * (Q'(s, a) - V(s)))``-weighted log-likelihood of the data action (capped at
      ``max_weight``); it never queries Q at actions outside the data.

    Collect and eval act as SAC does (sample / ``tanh(mu)``).
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)
    config = dict(
        type="iql",
        model=dict(twin_critic=True, action_space="reparameterization"),
        learn=dict(
            **OFFLINE_LEARN,
            # Adam learning rate of the value network V(s).
            learning_rate_value=3e-4,
            # Expectile tau of the value regression (0.5 = mean; towards 1 = max over the data's actions).
            expectile=0.7,
            # Inverse temperature of the advantage weights.
            beta=3.0,
            # Cap of the advantage weights.
            max_weight=100.0,
            # Hidden size of V(s)'s two hidden layers.
            value_hidden_size=256,
        ),
        collect=dict(**OFFLINE_COLLECT),
    )
    config_ranges = {"learn.expectile": between(0, 1), "learn.beta": greater_than(0),
                     "learn.max_weight": greater_than(0), "learn.learning_rate_value": greater_than(0)}

    def _init_learn(self) -> None:
        self._check_common()
        learn = self._cfg.learn
        self._gamma, self._nstep, self._theta = float(learn.discount_factor), int(self._cfg.nstep), float(
            learn.target_theta)
        self._ignore_done = bool(learn.ignore_done)
        obs_dim = int(self._model.obs_shape[0])
        hidden = int(learn.value_hidden_size)
        self._value = mlp(obs_dim, [hidden, hidden], out_dim=1).to(self._device)
        self._optimizer_q = build_adam(self._model.critic, learn.learning_rate_q)
        self._optimizer_policy = build_adam(self._model.actor, learn.learning_rate_policy)
        self._optimizer_value = build_adam(self._value, learn.learning_rate_value)
        self._target_model = frozen_copy(self._model)
        self._polyak = PolyakUpdate(self._target_model, self._model)
        self._critics_fixed = HeldFixed(self._model.critic)

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        """One IQL step: value (expectile), critics (TD on V(s')), actor (advantage-weighted BC), Polyak step."""
        learn = self._cfg.learn
        b = collate_qac_batch(data, self._device, ignore_done=self._ignore_done, where="IQLPolicy")
        self._set_train(True)
        with torch.no_grad():
            q_target = min_q(self._target_model.compute_critic({"obs": b.obs, "action": b.action})["q_value"])
            next_v = self._value(b.next_obs).squeeze(-1)
        v = self._value(b.obs).squeeze(-1)
        loss_v = expectile_loss(q_target - v, float(learn.expectile))
        optimizer_step(self._optimizer_value, loss_v)
        target = qac_td_target(b.reward, next_v, b.done, self._gamma, self._nstep, b.value_gamma)
        q = self._model.compute_critic({"obs": b.obs, "action": b.action})["q_value"]
        loss_q, td_error = critic_loss(q, target)
        optimizer_step(self._optimizer_q, loss_q)
        weight = advantage_weights(q_target - v, float(learn.beta), float(learn.max_weight))
        mu, sigma = self._model.compute_actor(b.obs)["logit"]
        pre_tanh = torch.atanh(b.action.clamp(-_ATANH_CLIP, _ATANH_CLIP))
        log_prob = torch.distributions.Normal(mu, sigma).log_prob(pre_tanh).sum(-1)
        loss_policy = -(weight * log_prob).mean()
        optimizer_step(self._optimizer_policy, loss_policy)
        self._polyak.update(self._theta)
        return {"cur_lr_q": self._optimizer_q.param_groups[0]["lr"], "critic_loss": loss_q.item(),
                "value_loss": loss_v.item(), "policy_loss": loss_policy.item(),
                "q_value": min_q(q).detach().mean().item(),
                "adv_weight": weight.mean().item(), "td_error": td_error.abs().mean().item()}

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr_q", "critic_loss", "value_loss", "policy_loss", "q_value", "adv_weight", "td_error"]

    def _state_dict_learn(self) -> dict[str, Any]:
        return {"model": self._model.state_dict(), "target_model": self._target_model.state_dict(),
                "value": self._value.state_dict(), "optimizer_q": self._optimizer_q.state_dict(),
                "optimizer_policy": self._optimizer_policy.state_dict(),
                "optimizer_value": self._optimizer_value.state_dict()}

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        load_model_state(self._model, state_dict, "model")
        for key, module in (("target_model", self._target_model), ("value", self._value)):
            if key in state_dict:
                load_model_state(module, state_dict, key)
        for key, optimizer in (("optimizer_q", self._optimizer_q), ("optimizer_policy", self._optimizer_policy),
                               ("optimizer_value", self._optimizer_value)):
            if key in state_dict:
                load_optimizer_state(optimizer, state_dict[key])


POLICY_REGISTRY.register("iql_command", IQLPolicy)
