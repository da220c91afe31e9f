"""Advantages written into a trajectory's transitions (DI-engine's ``get_gae`` and
``get_gae_with_default_last_value``), built on :func:`ding.rl_utils.gae`."""
from __future__ import annotations

from typing import Any

import torch

from .gae import gae, gae_data


def _as_tensor(x: Any) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def get_gae(data: list[dict[str, Any]], last_value: torch.Tensor, gamma: float = 0.99, gae_lambda: float = 0.97,
            cuda: bool = False) -> list[dict[str, Any]]:
    """Set ``adv`` (of the shape of the transition's ``value``) on each transition of one trajectory segment, in time
    order, from the transitions' ``value`` and ``reward`` and ``last_value`` (the value after the segment's last step:
    zero when the episode ended there). ``done`` inside the segment stops bootstrapping there; ``cuda`` is accepted
    for DI-engine's signature (the computation runs where the values are)."""
    if not data:
        return data
    value = torch.stack([_as_tensor(d["value"]) for d in data]).float()  # (T, *the value's shape)
    shape = value.shape[1:]
    last = _as_tensor(last_value).to(value.dtype).reshape(shape)
    next_value = torch.cat([value[1:], last.unsqueeze(0)])
    # a reward with the value's size takes its shape; a team reward against per-agent values, e.g. (1, 1) against
    # (1, n_agent), broadcasts
    reward = torch.stack([r.reshape(shape) if r.numel() == shape.numel() else r
                          for r in (_as_tensor(d["reward"]).to(value.dtype) for d in data)])
    done = torch.tensor([bool(d["done"]) for d in data], dtype=value.dtype)
    if value.dim() > 1:
        done = done.view(-1, *([1] * (value.dim() - 1))).expand_as(value)
    adv = gae(gae_data(value, next_value, reward, done, None), gamma, gae_lambda)
    for d, a in zip(data, adv):
        d["adv"] = a
    return data


def get_gae_with_default_last_value(data: list[dict[str, Any]], done: bool, gamma: float = 0.99,
                                    gae_lambda: float = 0.97, cuda: bool = False) -> list[dict[str, Any]]:
    """:func:`get_gae` for a segment whose last value is not known separately: zero when ``done``, else the segment's
    last transition is dropped and its ``value`` bootstraps the rest."""
    if done:
        last_value = torch.zeros_like(_as_tensor(data[-1]["value"]))
    else:
        last_value = _as_tensor(data.pop()["value"])
    return get_gae(data, last_value, gamma, gae_lambda, cuda)
