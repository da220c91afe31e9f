"""TD losses of DQN's variants in DI-engine's functional form: one-step C51, Munchausen DQN, branching (BDQ), soft
Q-learning (SQL) and DQfD."""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F

from .distributional import dist_nstep_td_data, dist_nstep_td_error
from .td import nstep_return, q_nstep_td_data

Criterion = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(pred, target, reduction="none")


def _bootstrap(next_sa: torch.Tensor, ret: torch.Tensor, done: torch.Tensor,
               value_gamma: torch.Tensor | float) -> torch.Tensor:
    """``ret + value_gamma * next_sa * (1 - done)``; for per-branch values ``next_sa`` (B, D) the per-sample
    ``ret``, ``done`` and ``value_gamma`` (B,) are broadcast over the branches."""
    not_done = 1.0 - done.to(next_sa.dtype)
    if next_sa.dim() > 1:
        not_done, ret = not_done.unsqueeze(-1), ret.unsqueeze(-1)
        if torch.is_tensor(value_gamma) and value_gamma.dim() == 1:
            value_gamma = value_gamma.unsqueeze(-1)
    return ret + value_gamma * next_sa * not_done


class dist_1step_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """One-step C51 inputs: ``dist`` / ``next_dist`` (B, [agents,] A, n_atom) probabilities, ``act`` / ``next_act``
    (B, [agents]), ``reward`` (B,), ``done`` (B,), ``weight`` or None."""

    dist: torch.Tensor
    next_dist: torch.Tensor
    act: torch.Tensor
    next_act: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None


def dist_1step_td_error(data: dist_1step_td_data, gamma: float, v_min: float, v_max: float,
                        n_atom: int) -> torch.Tensor:
    """One-step C51 loss: :func:`~ding.rl_utils.dist_nstep_td_error` with ``nstep=1`` (the loss only)."""
    dist, next_dist, act, next_act, reward, done, weight = data
    nstep = dist_nstep_td_data(dist, next_dist, act, next_act, reward.unsqueeze(0), done, weight)
    return dist_nstep_td_error(nstep, gamma, v_min, v_max, n_atom, nstep=1)[0]


class m_q_1step_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """Munchausen DQN inputs: ``q`` (B, A) online Q; ``target_q_current`` / ``target_q_next`` (B, A) the target
    network's Q of this and the next state; ``action`` (B,), ``reward`` (B,), ``done`` (B,), ``weight`` or None."""

    q: torch.Tensor
    target_q_current: torch.Tensor
    target_q_next: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None


def m_q_1step_td_error(data: m_q_1step_td_data, gamma: float, tau: float, alpha: float,
                       criterion: Criterion = _mse, log_pi_min: float = -1.0
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Munchausen DQN's one-step loss (soft Q-learning with temperature ``tau`` plus ``alpha`` times the clipped,
    scaled log-policy of the taken action added to the reward).

    target = r + alpha * clip(tau * log pi(a|s), log_pi_min, 0) + gamma * (1 - done) * sum_a' pi(a'|s')
    (Q'(s', a') - tau * log pi(a'|s')), with ``pi = softmax(Q_target / tau)``. Returns ``(loss, td_error_per_sample
    (B,) |target - q[a]|, action_gap: the mean top-1 minus top-2 target Q, clip_frac: the share of samples whose
    log-policy term was clipped)``.
    """
    q, target_q_current, target_q_next, action, reward, done, weight = data
    act = action.long().unsqueeze(-1)
    q_sa = q.gather(-1, act).squeeze(-1)
    with torch.no_grad():
        log_pi_next = F.log_softmax(target_q_next / tau, dim=-1)
        v_next = (log_pi_next.exp() * (target_q_next - tau * log_pi_next)).sum(-1)
        scaled_log_pi = tau * F.log_softmax(target_q_current / tau, dim=-1).gather(-1, act).squeeze(-1)
        clip_frac = (scaled_log_pi < log_pi_min).to(q.dtype).mean()
        munchausen = alpha * scaled_log_pi.clamp(log_pi_min, 0.0)
        target = reward + munchausen + gamma * (1.0 - done.to(q.dtype)) * v_next
        top2 = target_q_current.topk(2, dim=-1).values
        action_gap = (top2[..., 0] - top2[..., 1]).mean()
    per_sample = criterion(q_sa, target)
    loss = (per_sample * weight).mean() if weight is not None else per_sample.mean()
    return loss, (target - q_sa).detach().abs(), action_gap, clip_frac


def bdq_nstep_td_error(data: q_nstep_td_data, gamma: float, nstep: int = 1, cum_reward: bool = False,
                       value_gamma: torch.Tensor | float | None = None,
                       criterion: Criterion = _mse) -> tuple[torch.Tensor, torch.Tensor]:
    """BDQ's n-step loss, every branch its own Q-learning target with the shared reward.

    ``q`` / ``next_n_q`` (B, D, bins), ``action`` / ``next_n_action`` (B, D), ``reward`` (nstep, B) (or (B,) with
    ``cum_reward``). Returns ``(loss, td_error_per_sample (B,))``, the per-sample loss averaged over the branches.
    """
    q, next_n_q, action, next_n_action, reward, done, weight = data
    q_sa = q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)  # (B, D)
    with torch.no_grad():
        next_sa = next_n_q.gather(-1, next_n_action.long().unsqueeze(-1)).squeeze(-1)
        ret = reward if cum_reward else nstep_return(reward, gamma, nstep)
        target = _bootstrap(next_sa, ret, done, gamma ** nstep if value_gamma is None else value_gamma)
    per_sample = criterion(q_sa, target).mean(-1)
    loss = (per_sample * weight).mean() if weight is not None else per_sample.mean()
    return loss, per_sample.detach()


def q_nstep_sql_td_error(data: q_nstep_td_data, gamma: float, alpha: float, nstep: int = 1,
                         cum_reward: bool = False, value_gamma: torch.Tensor | float | None = None,
                         criterion: Criterion = _mse) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Soft Q-learning's n-step loss: the bootstrap is the soft value ``alpha * logsumexp(next_n_q / alpha)``.

    Returns ``(loss, td_error_per_sample (B,), target_v (B,))``, the last the soft values bootstrapped from.
    """
    q, next_n_q, action, next_n_action, reward, done, weight = data
    q_sa = q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        target_v = alpha * torch.logsumexp(next_n_q / alpha, dim=-1)
        ret = reward if cum_reward else nstep_return(reward, gamma, nstep)
        target = _bootstrap(target_v, ret, done, gamma ** nstep if value_gamma is None else value_gamma)
    per_sample = criterion(q_sa, target)
    loss = (per_sample * weight).mean() if weight is not None else per_sample.mean()
    return loss, per_sample.detach(), target_v


class dqfd_nstep_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """DQfD inputs: :class:`~ding.rl_utils.q_nstep_td_data`'s fields, then ``done_one_step`` (B,), ``weight``,
    ``new_n_q_one_step`` (B, A) the target Q of the next state, ``next_n_action_one_step`` (B,) and ``is_expert``
    (B,) 1 for demonstration samples."""

    q: torch.Tensor
    next_n_q: torch.Tensor
    action: torch.Tensor
    next_n_action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    done_one_step: torch.Tensor
    weight: torch.Tensor | None
    new_n_q_one_step: torch.Tensor
    next_n_action_one_step: torch.Tensor
    is_expert: torch.Tensor


def dqfd_nstep_td_error(data: dqfd_nstep_td_data, gamma: float, lambda_n_step_td: float,
                        lambda_supervised_loss: float, margin_function: float, lambda_one_step_td: float = 1.0,
                        nstep: int = 1, cum_reward: bool = False, value_gamma: torch.Tensor | float | None = None,
                        criterion: Criterion = _mse) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """DQfD's loss: ``lambda_n_step_td * n-step TD + lambda_one_step_td * 1-step TD + lambda_supervised_loss *
    large-margin loss``, the last ``max_a (Q(s, a) + margin * [a != a_E]) - Q(s, a_E)`` on expert samples only.

    Returns ``(loss, td_error_per_sample (B,): |n-step error| + |1-step error|, [n-step, 1-step, supervised]
    losses)``.
    """
    q, next_n_q, action, next_n_action, reward, done, done_1, weight, next_q_1, next_action_1, is_expert = data
    act = action.long().unsqueeze(-1)
    q_sa = q.gather(-1, act).squeeze(-1)
    with torch.no_grad():
        ret_n = reward if cum_reward else nstep_return(reward, gamma, nstep)
        next_sa = next_n_q.gather(-1, next_n_action.long().unsqueeze(-1)).squeeze(-1)
        target_n = _bootstrap(next_sa, ret_n, done, gamma ** nstep if value_gamma is None else value_gamma)
        reward_1 = reward if reward.dim() == 1 else reward[0]
        next_sa_1 = next_q_1.gather(-1, next_action_1.long().unsqueeze(-1)).squeeze(-1)
        target_1 = _bootstrap(next_sa_1, reward_1, done_1, gamma)
    margin = torch.full_like(q, float(margin_function)).scatter(-1, act, 0.0)
    supervised = ((q + margin).max(-1).values - q_sa) * is_expert.to(q.dtype)
    parts = [criterion(q_sa, target_n), criterion(q_sa, target_1), supervised]
    w = weight if weight is not None else torch.ones_like(q_sa)
    losses = [(p * w).mean() for p in parts]
    loss = lambda_n_step_td * losses[0] + lambda_one_step_td * losses[1] + lambda_supervised_loss * losses[2]
    td_error = ((target_n - q_sa).abs() + (target_1 - q_sa).abs()).detach()
    return loss, td_error, [x.detach() for x in losses]
