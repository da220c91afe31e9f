"""Run state that DI-engine's policy files keep outside their state dicts, saved with the learn state so that a
resumed run continues exactly, found among the policy's attributes:

- the update count of each target-network wrapper (when the next ``assign`` happens);
- each ``RunningMeanStd`` (PPO's value normalisation);
- tensors held directly by the policy rather than by its model (SAC's ``_log_alpha`` and ``_alpha``: their
  optimizer's state dict holds the moments, not the value);
- update counters, the integer attributes named ``*_cnt`` (DDPG / TD3's ``_forward_learn_cnt``, which decides when
  TD3 updates its actor).
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

from ding.model.wrapper import IModelWrapper, TargetNetworkWrapper
from ding.utils import RunningMeanStd

EXTRA_KEY = "ding_extra_state"


def _targets(obj: Any) -> list[TargetNetworkWrapper]:
    found = []
    while isinstance(obj, IModelWrapper):
        if isinstance(obj, TargetNetworkWrapper):
            found.append(obj)
        obj = obj.__dict__.get("_model")
    return found


def _is_counter(name: str, value: Any) -> bool:
    return name.endswith("_cnt") and isinstance(value, int) and not isinstance(value, bool)


def extra_state(policy: Any) -> dict[str, Any]:
    """``{attribute: state}`` for the policy's wrapper stacks holding target wrappers, its RunningMeanStds, its own
    tensors and its ``*_cnt`` counters."""
    state: dict[str, Any] = {}
    for name, value in vars(policy).items():
        if isinstance(value, IModelWrapper):
            counts = [t.update_count for t in _targets(value)]
            if counts:
                state[name] = {"target_update_counts": counts}
        elif isinstance(value, RunningMeanStd):
            state[name] = {"running_mean_std": value.state_dict()}
        elif isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
            state[name] = {"tensor": value.detach().clone()}
        elif _is_counter(name, value):
            state[name] = {"counter": value}
    return state


def load_extra_state(policy: Any, state: Mapping[str, Any]) -> None:
    for name, entry in state.items():
        value = getattr(policy, name, None)
        if "target_update_counts" in entry and isinstance(value, IModelWrapper):
            for target, count in zip(_targets(value), entry["target_update_counts"]):
                target.reset(target_update_count=int(count))
        elif "running_mean_std" in entry and isinstance(value, RunningMeanStd):
            value.load_state_dict(entry["running_mean_std"])
        elif "tensor" in entry:
            _load_tensor(policy, name, value, entry["tensor"])
        elif "counter" in entry:
            setattr(policy, name, int(entry["counter"]))


def _load_tensor(policy: Any, name: str, value: Any, saved: torch.Tensor) -> None:
    """Copy in place where the policy has a tensor of that shape (an optimizer may hold it), else set a copy."""
    if isinstance(value, torch.Tensor):
        if value.shape != saved.shape:
            raise ValueError(f"{type(policy).__name__}.{name}: the checkpoint holds a tensor of shape "
                             f"{tuple(saved.shape)}, the policy one of shape {tuple(value.shape)}; resume with the "
                             f"config the checkpoint was written with")
        with torch.no_grad():
            value.copy_(saved.to(device=value.device, dtype=value.dtype))
    else:
        setattr(policy, name, saved.clone())
