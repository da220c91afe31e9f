"""CQL: conservative Q-learning, on SAC for continuous actions (``cql``) and on QR-DQN for discrete ones
(``discrete_cql``)."""
from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import torch

from ding.config.ranges import at_least, greater_than
from ding.rl_utils import cql_penalty, critic_loss, discrete_cql_penalty, min_q, qac_td_target, sac_temperature_loss
from ding.rl_utils.sac import squashed_gaussian_sample
from ding.rl_utils.td import nstep_return
from ding.rl_utils.td_quantile import quantile_huber_per_sample
from ding.torch_utils.fast_import import make_adam
from ding.utils import POLICY_REGISTRY
from ding.utils.data import stack_field

from .base_policy import load_optimizer_state
from .dqn import DQNPolicy
from .offline_utils import OFFLINE_COLLECT, OFFLINE_LEARN
from .qac_utils import collate_qac_batch, optimizer_step
from .sac import SACPolicy


@POLICY_REGISTRY.register("cql")
class CQLPolicy(SACPolicy):
    """CQL(H) on SAC (Kumar et al. 2020): SAC's critic loss plus ``min_q_weight`` times the conservative penalty
    :func:`~ding.rl_utils.cql_penalty` over ``num_actions`` random, current-policy and next-policy actions per state.
    With ``with_lagrange`` and ``lagrange_thresh > 0`` the penalty's weight is a learned multiplier that keeps the
    penalty near the threshold. The actor and temperature update as in SAC."""

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)
    config = dict(
        type="cql",
        model=dict(twin_critic=True, action_space="reparameterization"),
        learn=dict(
            **OFFLINE_LEARN,
            # Actions sampled per state for the penalty's logsumexp (each of random / current / next policy).
            num_actions=10,
            # Learn the penalty's weight (alpha') so the penalty tracks lagrange_thresh (needs lagrange_thresh > 0).
            with_lagrange=False,
            lagrange_thresh=-1.0,
            # Weight of the conservative penalty.
            min_q_weight=1.0,
            # Include SAC's entropy bonus in the critics' target.
            with_q_entropy=False,
        ),
        collect=dict(**OFFLINE_COLLECT),
    )
    config_ranges = {"learn.num_actions": at_least(1, integer=True), "learn.min_q_weight": at_least(0)}

    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self._cfg.learn
        self._num_actions = int(learn.num_actions)
        self._min_q_weight = float(learn.min_q_weight)
        self._with_q_entropy = bool(learn.with_q_entropy)
        self._lagrange_thresh = float(learn.lagrange_thresh)
        self._with_lagrange = bool(learn.with_lagrange) and self._lagrange_thresh > 0
        self._log_alpha_prime = torch.zeros(1, device=self._device, requires_grad=self._with_lagrange)
        self._optimizer_alpha_prime = (make_adam([self._log_alpha_prime], lr=learn.learning_rate_q)
                                       if self._with_lagrange else None)

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        """One CQL step: critics (TD + conservative penalty), actor, temperature, Polyak step."""
        b = collate_qac_batch(data, self._device, ignore_done=self._ignore_done, where="CQLPolicy")
        self._set_train(True)
        alpha = self._log_alpha.detach().exp()
        n, k = b.obs.shape[0], self._num_actions
        with torch.no_grad():
            # one actor pass over s and s' serves the target's action and the penalty's 2k policy actions per state
            mu, sigma = self._model.compute_actor(torch.cat([b.obs, b.next_obs]))["logit"]
            next_action, next_log_prob = squashed_gaussian_sample(mu[n:], sigma[n:])
            next_q = self._target_model.compute_critic({"obs": b.next_obs, "action": next_action})["q_value"]
            target = qac_td_target(b.reward, next_q, b.done, self._gamma, self._nstep, b.value_gamma,
                                   next_log_prob if self._with_q_entropy else None, alpha)
            # the penalty's actions: k uniform, k from pi(.|s), k from pi(.|s'), all valued at s
            policy_a, policy_logp = squashed_gaussian_sample(mu.repeat_interleave(k, 0),
                                                             sigma.repeat_interleave(k, 0))
            rand_a = torch.empty(n * k, b.action.shape[1], device=self._device).uniform_(-1, 1)
            obs_k = b.obs.repeat_interleave(k, 0)
        q = self._model.compute_critic({"obs": b.obs, "action": b.action})["q_value"]
        loss_td, td_error = critic_loss(q, target)

        def q_at(action: torch.Tensor) -> list[torch.Tensor]:
            # one critic pass per kind of action: (n * k)-row passes run faster on a CPU than one 3x larger
            out = self._model.compute_critic({"obs": obs_k, "action": action})["q_value"]
            return [qi.view(n, k) for qi in (out if isinstance(out, list) else [out])]

        qs = q if isinstance(q, list) else [q]
        curr_a, next_a = policy_a.view(2, n * k, -1)
        curr_logp, next_logp = policy_logp.view(2, n, k)
        penalty = sum(cql_penalty(qd, qr, qc, qn, curr_logp, next_logp, b.action.shape[1])
                      for qd, qr, qc, qn in zip(qs, q_at(rand_a), q_at(curr_a), q_at(next_a)))
        assert isinstance(penalty, torch.Tensor)
        output: dict[str, Any] = {}
        if self._with_lagrange:
            assert self._optimizer_alpha_prime is not None
            alpha_prime = self._log_alpha_prime.exp().clamp(0.0, 1e6)
            gap = self._min_q_weight * penalty - self._lagrange_thresh * len(qs)
            optimizer_step(self._optimizer_alpha_prime, -(alpha_prime * gap.detach()).sum())
            loss_cql = alpha_prime.detach() * gap
            output["alpha_prime"] = alpha_prime.item()
        else:
            loss_cql = self._min_q_weight * penalty
        optimizer_step(self._optimizer_q, loss_td + loss_cql.sum())
        output.update(self._actor_and_alpha_step(b.obs, alpha))
        self._polyak.update(self._theta)
        output.update({"cur_lr_q": self._optimizer_q.param_groups[0]["lr"], "critic_loss": loss_td.item(),
                       "cql_loss": float(loss_cql.sum().item()), "alpha": alpha.item(),
                       "q_value": min_q(q).detach().mean().item(), "td_error": td_error.abs().mean().item()})
        return output

    def _actor_and_alpha_step(self, obs: torch.Tensor, alpha: torch.Tensor) -> dict[str, float]:
        """SAC's actor step (critics held fixed) and, with ``auto_alpha``, its temperature step."""
        action, log_prob = self._sample(obs)
        with self._critics_fixed:
            q_pi = min_q(self._model.compute_critic({"obs": obs, "action": action})["q_value"])
        loss_policy = (alpha * log_prob - q_pi).mean()
        optimizer_step(self._optimizer_policy, loss_policy)
        if self._auto_alpha:
            assert self._optimizer_alpha is not None
            optimizer_step(self._optimizer_alpha, sac_temperature_loss(self._log_alpha, log_prob, self._target_entropy))
        return {"policy_loss": loss_policy.item(), "entropy": -log_prob.detach().mean().item()}

    def _monitor_vars_learn(self) -> list[str]:
        return [*super()._monitor_vars_learn(), "cql_loss", *(["alpha_prime"] if self._with_lagrange else [])]

    def _state_dict_learn(self) -> dict[str, Any]:
        state = super()._state_dict_learn()
        if self._optimizer_alpha_prime is not None:
            state["log_alpha_prime"] = self._log_alpha_prime.detach()
            state["optimizer_alpha_prime"] = self._optimizer_alpha_prime.state_dict()
        return state

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        super()._load_state_dict_learn(state_dict)
        if self._optimizer_alpha_prime is not None and "log_alpha_prime" in state_dict:
            with torch.no_grad():
                self._log_alpha_prime.copy_(torch.as_tensor(state_dict["log_alpha_prime"]).reshape(1))
            load_optimizer_state(self._optimizer_alpha_prime, state_dict["optimizer_alpha_prime"])


@POLICY_REGISTRY.register("discrete_cql")
class DiscreteCQLPolicy(DQNPolicy):
    """Discrete CQL on QR-DQN (DI-engine's ``discrete_cql``): the quantile Huber loss (``kappa``) of n-step targets
    from the target network at the online network's greedy next action, plus ``min_q_weight`` times
    :func:`~ding.rl_utils.discrete_cql_penalty` on the mean-over-quantiles Q-values. Acts greedily on mean Q."""

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)
    config = dict(
        type="discrete_cql",
        model=dict(num_quantiles=32),
        learn=dict(
            **OFFLINE_LEARN,
            # Huber threshold of the quantile regression loss.
            kappa=1.0,
            # Weight of the conservative penalty.
            min_q_weight=1.0,
        ),
        collect=dict(**OFFLINE_COLLECT),
    )
    config_ranges = {"learn.kappa": greater_than(0), "learn.min_q_weight": at_least(0)}
    action_space_types = (gym.spaces.Discrete,)

    def default_model(self) -> tuple[str, list[str]]:
        return "qrdqn", ["ding.model.template.offline"]

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        """One QR-DQN + CQL gradient step."""
        keys = ["obs", "action", "reward", "next_obs", "done"] + (["value_gamma"] if "value_gamma" in data[0] else [])
        b = {k: stack_field(data, k).to(self._device) for k in keys}
        obs, next_obs = b["obs"].float(), b["next_obs"].float()
        action = b["action"].reshape(-1).long()
        self._set_train(True)
        out = self._model(obs)
        quantiles, tau = out["q"], out["tau"][0, :, 0]  # (B, A, N), (N,) from (B, N, 1)
        q_taken = quantiles[torch.arange(len(action)), action]  # (B, N)
        with torch.no_grad():
            next_action = self._model(next_obs)["logit"].argmax(-1)
            next_quant = self._target_model(next_obs)["q"][torch.arange(len(action)), next_action]  # (B, N)
            reward = b["reward"].float()
            ret = reward if reward.dim() == 1 else nstep_return(reward.t(), self._gamma, reward.shape[1])
            discount = b.get("value_gamma", torch.full_like(ret, self._gamma ** self._nstep))
            done = torch.zeros_like(ret) if self._ignore_done else b["done"].float().reshape(-1)
            target = ret[:, None] + (discount * (1.0 - done))[:, None] * next_quant
        loss_qr = quantile_huber_loss(q_taken, target, tau, float(self._cfg.learn.kappa))
        loss_cql = discrete_cql_penalty(out["logit"], action)
        loss = loss_qr + float(self._cfg.learn.min_q_weight) * loss_cql
        self._optimize(loss)
        return {"cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": loss.item(), "qr_loss": loss_qr.item(),
                "cql_loss": loss_cql.item(), "q_value": out["logit"].detach().mean().item()}

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "qr_loss", "cql_loss", "q_value"]


def quantile_huber_loss(pred: torch.Tensor, target: torch.Tensor, tau: torch.Tensor, kappa: float) -> torch.Tensor:
    """QR-DQN's loss averaged over the batch (:func:`ding.rl_utils.td_quantile.quantile_huber_per_sample`);
    ``pred``, ``target``: (B, N)."""
    return quantile_huber_per_sample(pred, target, tau, kappa).mean()


POLICY_REGISTRY.register("cql_command", CQLPolicy)
POLICY_REGISTRY.register("discrete_cql_command", DiscreteCQLPolicy)
