"""TD(lambda): lambda-returns over a time-major trajectory and the value loss towards them (DI-engine's
``td_lambda_error``)."""
from __future__ import annotations

from collections import namedtuple

import torch
import torch.nn.functional as F

# value: (T + 1, B) estimates for steps 0..T (0 past a terminal state); reward: (T, B); weight: (T, B) or None
td_lambda_data = namedtuple("td_lambda_data", ["value", "reward", "weight"])


def multistep_forward_view(bootstrap_values: torch.Tensor, rewards: torch.Tensor, gammas: torch.Tensor,
                           lambda_: torch.Tensor, done: torch.Tensor | None = None) -> torch.Tensor:
    """``G_t = r_t + gamma_t * ((1 - lambda_t) * V_{t+1} + lambda_t * G_{t+1})`` backwards from
    ``G_{T-1} = r_{T-1} + gamma_{T-1} * V_T``; ``bootstrap_values[t]`` is ``V_{t+1}``; ``done`` cuts the sum."""
    not_done = 1.0 - (torch.zeros_like(rewards) if done is None else done.float())
    result = torch.empty_like(rewards)
    result[-1] = rewards[-1] + not_done[-1] * gammas[-1] * bootstrap_values[-1]
    discounts = gammas * lambda_
    for t in range(rewards.shape[0] - 2, -1, -1):
        result[t] = rewards[t] + not_done[t] * (discounts[t] * result[t + 1]
                                                + (gammas[t] - discounts[t]) * bootstrap_values[t])
    return result


def generalized_lambda_returns(bootstrap_values: torch.Tensor, rewards: torch.Tensor,
                               gammas: float | torch.Tensor, lambda_: float | torch.Tensor,
                               done: torch.Tensor | None = None) -> torch.Tensor:
    """Lambda-returns (T, B) for steps 0..T-1 from values (T + 1, B); ``gammas`` / ``lambda_`` scalars or (T, B)."""
    gammas = gammas if isinstance(gammas, torch.Tensor) else gammas * torch.ones_like(rewards)
    lambda_ = lambda_ if isinstance(lambda_, torch.Tensor) else lambda_ * torch.ones_like(rewards)
    return multistep_forward_view(bootstrap_values[1:], rewards, gammas, lambda_, done)


def td_lambda_error(data: td_lambda_data, gamma: float = 0.9, lambda_: float = 0.8) -> torch.Tensor:
    """``0.5 * mean(weight * (G^lambda_t - V_t)^2)`` over steps 0..T-1 (the returns are not differentiated)."""
    value, reward, weight = data
    if weight is None:
        weight = torch.ones_like(reward)
    with torch.no_grad():
        return_ = generalized_lambda_returns(value, reward, gamma, lambda_)
    return 0.5 * (F.mse_loss(return_, value[:-1], reduction="none") * weight).mean()
