"""Temporal-difference losses for value-based methods."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F

from .value_rescale import value_inv_transform, value_transform


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


def as_gamma(gamma: Any, like: torch.Tensor) -> float | torch.Tensor:
    """A discount factor as a float, or per sample as a (B,) tensor: DI-engine's NGU passes a list of per-sample
    gammas (one tensor each)."""
    if isinstance(gamma, (list, tuple)):
        return torch.stack([torch.as_tensor(g, dtype=like.dtype) for g in gamma]).to(like.device).reshape(-1)
    if torch.is_tensor(gamma):
        return gamma.to(like.device, like.dtype) if gamma.dim() else float(gamma)
    return float(gamma)


def nstep_return(reward: torch.Tensor, gamma: float | torch.Tensor, nstep: int) -> torch.Tensor:
    """Discounted sum ``sum_k gamma^k * reward[k]`` over the first axis of an (nstep, B) reward tensor (``gamma`` a
    float, or a (B,) tensor of per-sample discounts)."""
    if reward.dim() == 1:
        reward = reward.unsqueeze(0)
    if reward.shape[0] != nstep:
        raise ValueError(
            f"q_nstep_td_error: reward has {reward.shape[0]} steps on its first axis (shape {tuple(reward.shape)}) "
            f"but nstep={nstep}; the samples must come from get_train_sample with the same policy.nstep"
        )
    steps = torch.arange(nstep, dtype=reward.dtype, device=reward.device).unsqueeze(1)
    gamma = as_gamma(gamma, reward)
    discounts = gamma.unsqueeze(0) ** steps if torch.is_tensor(gamma) else gamma ** steps
    return (discounts * reward).sum(0)


def q_nstep_td_error(
    data: q_nstep_td_data,
    gamma: float | torch.Tensor | Sequence[torch.Tensor],
    nstep: int = 1,
    cum_reward: bool = False,
    value_gamma: torch.Tensor | float | None = None,
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
    gamma = as_gamma(gamma, q)
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


def sequence_nstep_windows(
    reward: torch.Tensor, done: torch.Tensor, mask: torch.Tensor, gamma: float, nstep: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """n-step windows inside (B, T) sequences: ``(ret, steps, terminated)``, each (B, T).

    The window of step ``t`` covers steps ``t .. t + k - 1`` with ``k <= nstep``: it stops after a termination
    (``done``) and at the last valid step (``mask``), so it never leaves its episode nor the sequence. ``ret`` is
    ``sum_j gamma^j r_{t+j}`` over the window, ``steps`` is ``k`` (0 where ``mask`` is False) and ``terminated``
    whether the window ended with a termination (then nothing is bootstrapped). The bootstrap state of step ``t``
    is the observation after step ``t + k - 1``, i.e. position ``t + k`` of the sequence's observations extended by
    the last valid step's ``next_obs``.
    """
    mask = mask.bool()
    done = done.bool()
    ret = torch.zeros_like(reward)
    steps = torch.zeros(reward.shape, dtype=torch.long, device=reward.device)
    terminated = torch.zeros_like(mask)
    alive = mask.clone()
    for k in range(nstep):
        if k:
            # step t + k of every window: shift left by k, pad the end with invalid steps
            r_k = torch.nn.functional.pad(reward[:, k:], (0, k))
            d_k = torch.nn.functional.pad(done[:, k:], (0, k))
            alive = alive & torch.nn.functional.pad(mask[:, k:], (0, k))
        else:
            r_k, d_k = reward, done
        ret = ret + (gamma ** k) * r_k * alive
        steps = steps + alive.long()
        terminated = terminated | (alive & d_k)
        alive = alive & ~d_k
    return ret, steps, terminated


def q_nstep_sequence_td_error(
    q: torch.Tensor,
    boot_value: torch.Tensor,
    action: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    nstep: int,
    value_rescale: bool = True,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """n-step Q-learning over (B, T) sequences (R2D2): ``(loss, td_error)`` with ``td_error`` (B, T), 0 off ``mask``.

    ``q``: (B, T, A) online Q-values; ``boot_value``: (B, T + 1) the target network's value of each position of the
    extended observations (double Q: read at the online network's argmax). Windows as in
    :func:`sequence_nstep_windows`. With ``value_rescale`` the target is
    ``h(ret + gamma^k * h^-1(boot))`` (Pohlen et al.), else ``ret + gamma^k * boot``. The loss is the squared error
    averaged over each sequence's ``mask``-ed steps, weighted per sequence by ``weight`` and averaged over the batch.
    """
    mask_f = mask.to(q.dtype)
    q_sa = q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        ret, steps, terminated = sequence_nstep_windows(reward, done, mask, gamma, nstep)
        index = torch.arange(q.shape[1], device=q.device).unsqueeze(0) + steps  # bootstrap position t + k
        boot = boot_value.gather(1, index)
        if value_rescale:
            boot = value_inv_transform(boot)
        target = ret + (gamma ** steps.to(q.dtype)) * boot * (~terminated).to(q.dtype)
        if value_rescale:
            target = value_transform(target)
    td_error = (target - q_sa) * mask_f
    per_sequence = (td_error ** 2).sum(1) / mask_f.sum(1).clamp_min(1.0)
    if weight is not None:
        per_sequence = per_sequence * weight
    return per_sequence.mean(), td_error.detach()

from .td_lambda import generalized_lambda_returns, td_lambda_data, td_lambda_error  # noqa: E402,F401 (DI-engine's path)

# DI-engine's module path for the shape helpers of its accelerated TD losses
from .td_shapes import shape_fn_dntd, shape_fn_qntd, shape_fn_qntd_rescale, shape_fn_td_lambda  # noqa: E402

__all__ = ["nstep_return", "q_nstep_td_data", "q_nstep_td_error", "q_nstep_sequence_td_error",
           "sequence_nstep_windows", "shape_fn_dntd", "shape_fn_qntd", "shape_fn_qntd_rescale", "shape_fn_td_lambda"]
