"""Generalized advantage estimation (GAE) over collected trajectory segments."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch


class gae_data(NamedTuple):  # noqa: N801 - DI-engine's public name
    """Inputs of :func:`gae`, time along the first axis (T,) or (T, B) (B independent rows, e.g. envs).

    ``value``: V(s_t). ``next_value``: V(s'_t), the value of each transition's own next observation (for the last
    step of an episode cut by a time limit, the final observation). ``reward``: r_t. ``done``: termination (no
    bootstrap). ``traj_flag``: the last step of a segment (its episode ended, or the collector cut the trajectory
    there): the recursion does not carry across it. None: ``done``.
    """

    value: torch.Tensor
    next_value: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    traj_flag: torch.Tensor | None


def gae(data: gae_data, gamma: float = 0.99, lambda_: float = 0.97) -> torch.Tensor:
    """Advantages, same shape as ``data.value``. A value with more axes than the reward, e.g. (T, B, A) per agent
    against a team reward (T, B), gets the reward, ``done`` and ``traj_flag`` broadcast over the extra axes.

    ``delta_t = r_t + gamma * (1 - done_t) * V(s'_t) - V(s_t)`` and ``A_t = delta_t + gamma * lambda_ * (1 -
    traj_flag_t) * A_{t+1}``. A step truncated by a time limit has ``done=False`` (it bootstraps from the value of its
    final observation) and ``traj_flag=True`` (it does not continue into the next segment).
    """
    value, next_value, reward, done, traj_flag = data
    if traj_flag is None:
        traj_flag = done
    reward, done, traj_flag = (_trailing_axes(x, value.dim()) for x in (reward, done, traj_flag))
    not_done = 1.0 - done.to(value.dtype)
    delta = (reward + gamma * not_done * next_value - value).detach().cpu().double().numpy()
    factor = (gamma * lambda_ * (1.0 - traj_flag.to(value.dtype))).detach().cpu().double().numpy()
    adv = np.empty_like(delta)
    if delta.ndim == 1:  # the usual case (segments laid end to end): plain floats, cheaper than numpy scalars
        last = 0.0
        d, f = delta.tolist(), factor.tolist()
        out = [0.0] * len(d)
        for t in range(len(d) - 1, -1, -1):
            last = d[t] + f[t] * last
            out[t] = last
        adv[:] = out
    else:
        last_row = np.zeros(delta.shape[1:])
        for t in range(delta.shape[0] - 1, -1, -1):
            last_row = delta[t] + factor[t] * last_row
            adv[t] = last_row
    return torch.as_tensor(adv, dtype=value.dtype, device=value.device)


def _trailing_axes(x: torch.Tensor, ndim: int) -> torch.Tensor:
    """``x`` with size-1 axes appended up to ``ndim`` axes (broadcast against per-agent values)."""
    return x.reshape(*x.shape, *([1] * (ndim - x.dim()))) if x.dim() < ndim else x
