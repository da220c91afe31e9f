"""The two data conventions a policy's collect and eval views can follow, and the conversions between them.

ding's own policies return numpy from ``forward`` and take the transitions as collected (numpy) in
``get_train_sample``. DI-engine's policy files return torch tensors from ``forward`` and expect the transitions
turned into tensors before ``get_train_sample`` (DI-engine's collector does that). The :class:`~ding.policy.Policy`
views find out which one a policy follows from its first ``forward`` output (or from the class attribute
``tensor_io``), and then give the workers numpy and a tensor policy tensors.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ding.torch_utils import to_ndarray, to_tensor


def holds_tensors(output: Mapping[int, Any]) -> bool:
    """Whether a ``{env_id: {...}}`` forward output carries torch tensors (looks at the first env's entry)."""
    for entry in output.values():
        values = entry.values() if isinstance(entry, Mapping) else [entry]
        return any(_has_tensor(v) for v in values)
    return False


def _has_tensor(x: Any) -> bool:
    if isinstance(x, torch.Tensor):
        return True
    if isinstance(x, Mapping):
        return any(_has_tensor(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_tensor(v) for v in x)
    return False


def outputs_to_numpy(output: Mapping[int, Any]) -> dict[int, Any]:
    """Every tensor of a ``{env_id: {...}}`` forward output as a numpy array (what env managers step with)."""
    return {env_id: to_ndarray(entry) for env_id, entry in output.items()}


def transitions_to_tensor(transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """New transition dicts with numpy arrays turned into tensors (python scalars and bools kept), as DI-engine's
    collector hands them to ``get_train_sample``; the collector's own list is left as it is."""
    return [to_tensor(t, transform_scalar=False) for t in transitions]


def tensor_outputs(output: Mapping[int, Any]) -> dict[int, Any]:
    """Every numpy array of a ``{env_id: {...}}`` forward output as a tensor (what DI-engine's policies return)."""
    return {env_id: to_tensor(entry, transform_scalar=False) for env_id, entry in output.items()}


def di_engine_view(view: Any) -> Any:
    """A collect or eval mode view that follows DI-engine's convention towards a hand-written worker: ``forward``
    returns tensors; ``process_transition`` and ``get_train_sample`` accept tensors. ding's views give and take numpy
    (what ding's own workers use). Objects that are not mode views (e.g. a scripted opponent with ``forward`` and
    ``reset``) come back unchanged."""
    if not (isinstance(view, tuple) and hasattr(view, "_replace") and hasattr(view, "forward")):
        return view
    if getattr(view.forward, "di_engine_convention", False):
        return view
    forward = view.forward

    def tensor_forward(data: Mapping[int, Any], **kwargs: Any) -> dict[int, Any]:
        return tensor_outputs(forward(data, **kwargs))

    tensor_forward.di_engine_convention = True  # type: ignore[attr-defined]
    changes: dict[str, Any] = {"forward": tensor_forward}
    if hasattr(view, "process_transition"):
        process = view.process_transition

        def numpy_process_transition(obs: Any, policy_output: Any, timestep: Any) -> Any:
            return process(to_ndarray(obs), to_ndarray(policy_output), timestep)

        changes["process_transition"] = numpy_process_transition
    if hasattr(view, "get_train_sample"):
        get_train_sample = view.get_train_sample

        def numpy_get_train_sample(transitions: list[dict[str, Any]]) -> list[Any]:
            return get_train_sample([to_ndarray(t) for t in transitions])

        changes["get_train_sample"] = numpy_get_train_sample
    return view._replace(**changes)
