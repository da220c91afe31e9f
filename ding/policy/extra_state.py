"""Run state that DI-engine's policy files keep outside their state dicts, saved with the learn state so that a
resumed run continues exactly: the update count of each target-network wrapper (when the next ``assign`` happens)
and each ``RunningMeanStd`` (PPO's value normalisation), found among the policy's attributes."""
from __future__ import annotations

from typing import Any, Mapping

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


def extra_state(policy: Any) -> dict[str, Any]:
    """``{attribute: state}`` for the policy's wrapper stacks holding target wrappers and its RunningMeanStds."""
    state: dict[str, Any] = {}
    for name, value in vars(policy).items():
        if isinstance(value, IModelWrapper):
            counts = [t.update_count for t in _targets(value)]
            if counts:
                state[name] = {"target_update_counts": counts}
        elif isinstance(value, RunningMeanStd):
            state[name] = {"running_mean_std": value.state_dict()}
    return state


def load_extra_state(policy: Any, state: Mapping[str, Any]) -> None:
    for name, entry in state.items():
        value = getattr(policy, name, None)
        if "target_update_counts" in entry and isinstance(value, IModelWrapper):
            for target, count in zip(_targets(value), entry["target_update_counts"]):
                target.reset(target_update_count=int(count))
        elif "running_mean_std" in entry and isinstance(value, RunningMeanStd):
            value.load_state_dict(entry["running_mean_std"])
