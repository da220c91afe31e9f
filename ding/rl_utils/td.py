"""Temporal-difference losses for value-based methods."""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F


class q_nstep_td_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """Inputs of :func:`q_nstep_td_error` (DI-engine's field names).

    ``q``: (B, A) online Q-values of ``obs``. ``next_n_q``: (B, A) target-network Q-values of the state n steps later.
    ``action``: (B,) taken actions. ``next_n_action``: (B,) actions at which ``next_n_q`` is evaluated (argmax of the
    ONLINE network for double DQN). ``reward``: (nstep, B) rewards of the next n steps (zero after the episode
    ended), or (B,) when ``nstep == 1``. ``done``: (B,) termination within the n steps (no bootstrap).
    ``weight``: (B,) importance-sampling weights or None.
    """

    q: torch.Tensor
    next_n_q: torch.Tensor
    action: torch.Tensor
    next_n_action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    weight: torch.Tensor | None


def nstep_return(reward: torch.Tensor, gamma: float, nstep: int) -> torch.Tensor:
    """Discounted sum ``sum_k gamma^k * reward[k]`` over the first axis of an (nstep, B) reward tensor."""
    if reward.dim() == 1:
        reward = reward.unsqueeze(0)
    if reward.shape[0] != nstep:
        raise ValueError(
            f"q_nstep_td_error: reward has {reward.shape[0]} steps on its first axis (shape {tuple(reward.shape)}) "
            f"but nstep={nstep}; the samples must come from get_train_sample with the same policy.nstep"
        )
    discounts = gamma ** torch.arange(nstep, dtype=reward.dtype, device=reward.device)
    return (discounts.unsqueeze(1) * reward).sum(0)


def q_nstep_td_error(
    data: q_nstep_td_data,
    gamma: float,
    nstep: int = 1,
    cum_reward: bool = False,
    value_gamma: torch.Tensor | None = None,
    criterion: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """n-step Q-learning loss: ``(loss, td_error_per_sample)``.

    target = sum_k gamma^k r_k + value_gamma * next_n_q[next_n_action] * (1 - done), with ``value_gamma`` defaulting
    to ``gamma ** nstep`` (a per-sample tensor when a window was cut short by a time limit, see
    :func:`ding.rl_utils.get_nstep_return_data`). ``cum_reward=True`` means ``reward`` already holds the discounted
    sum (shape (B,)). ``criterion(pred, target)`` returns per-sample losses (default squared error). The loss is the
    ``weight``-ed mean of those; ``td_error_per_sample`` is the detached signed error ``target - q[action]`` (its
    absolute value is the priority for prioritized replay).
    """
    q, next_n_q, action, next_n_action, reward, done, weight = data
    # Q(s_t, a_t) of the taken actions.
    q_sa = q.gather(1, action.long().unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        # Bootstrap value: the target network's Q at the action chosen for the state n steps later.
        next_q_sa = next_n_q.gather(1, next_n_action.long().unsqueeze(1)).squeeze(1)
        ret = reward if cum_reward else nstep_return(reward, gamma, nstep)
        if value_gamma is None:
            value_gamma = gamma ** nstep
        not_done = 1.0 - done.to(q_sa.dtype)
        target = ret + value_gamma * next_q_sa * not_done
    per_sample_loss = criterion(q_sa, target) if criterion is not None else F.mse_loss(q_sa, target, reduction="none")
    if weight is not None:
        per_sample_loss = per_sample_loss * weight
    loss = per_sample_loss.mean()
    return loss, (target - q_sa).detach()
