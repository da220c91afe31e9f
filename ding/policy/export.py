"""Write a policy's eval-mode action (:mod:`ding.policy.eval_actor`) as an ONNX or TorchScript file.

The file's inputs are ``obs`` (a batch, any size, in the env's observation dtype) and, for a recurrent policy,
``state``; its outputs are ``action`` (what ``compute_single_action`` returns, stacked) and ``next_state``, plus
``env_action`` when the env maps the policy's [-1, 1] actions onto its bounds (``env.act_scale=True``): the action
the env wrapper steps the simulator with. A JSON description (:class:`ExportedFile.metadata`) travels inside the
file: ONNX ``metadata_props['ding']``, TorchScript's extra file ``ding_export.json``.

ONNX goes through torch's ``torch.export``-based exporter (``dynamo=True``, which needs ``onnxscript``): it is
torch's default and maintained one, while the TorchScript-based exporter is deprecated and marked for removal; both
run offline. See docs/export.md.
"""
from __future__ import annotations

import io
import json
import logging
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ding.utils import ExportError, atomic_write

from .base_policy import Policy
from .eval_actor import EvalActor, eval_actor

FORMATS = ("onnx", "torchscript")
SUFFIXES = {"onnx": ".onnx", "torchscript": ".pt"}
METADATA_KEY = "ding"  # ONNX metadata_props key
TORCHSCRIPT_METADATA = "ding_export.json"  # TorchScript extra file
_OBS_DTYPES = {"float32": torch.float32, "uint8": torch.uint8}
_EXAMPLE_BATCH = 2


@dataclass(frozen=True)
class ExportedFile:
    """What :func:`export_policy` wrote: the file, its format, its size and the description stored inside it."""

    path: str
    format: str
    size_bytes: int
    metadata: dict[str, Any] = field(default_factory=dict)


class _WithEnvAction(nn.Module):
    """An actor's [-1, 1] action plus that action mapped onto the env's ``[low, high]`` (``ding.envs.scale_action``:
    clip to [-1, 1], then affine)."""

    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, actor: nn.Module, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        self.actor = actor
        self.register_buffer("low", torch.as_tensor(np.asarray(low, np.float32)))
        self.register_buffer("high", torch.as_tensor(np.asarray(high, np.float32)))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        action = self.actor(obs)
        return action, self.low + (action.clamp(-1.0, 1.0) + 1.0) * 0.5 * (self.high - self.low)


def export_policy(policy: Policy, path: str | os.PathLike, fmt: str = "onnx", obs_dtype: str = "float32",
                  env_action_bounds: tuple[np.ndarray, np.ndarray] | None = None,
                  metadata: dict[str, Any] | None = None) -> ExportedFile:
    """Write ``policy``'s eval action to ``path`` (atomically) as ``fmt`` (``'onnx'`` or ``'torchscript'``).

    ``obs_dtype`` is the dtype of the env's observations (``'uint8'`` for pixels: the file scales them as the model
    does); ``env_action_bounds`` adds the ``env_action`` output; ``metadata`` joins the stored description.
    """
    if fmt not in FORMATS:
        raise ExportError(f"export: unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if obs_dtype not in _OBS_DTYPES:
        raise ExportError(f"export: observations of dtype {obs_dtype!r} cannot be exported; ding's models take "
                          f"{' or '.join(_OBS_DTYPES)} observations")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ExportError(f"export: output '{path}' is a directory; give a file name, e.g. "
                          f"{os.path.join(path, 'policy' + SUFFIXES[fmt])}")
    actor = eval_actor(policy)
    module, inputs, outputs = _graph(actor, env_action_bounds)
    example = _example_inputs(actor, _OBS_DTYPES[obs_dtype])
    info = {
        "format_version": 1, "policy_type": str(policy.cfg.get("type")), "policy_class": type(policy).__name__,
        "inputs": inputs, "outputs": outputs, "obs_shape": list(actor.obs_shape), "obs_dtype": obs_dtype,
        "action_kind": actor.action_kind,
        "state_shape": None if actor.state_shape is None else list(actor.state_shape),
        **({} if env_action_bounds is None else {"env_action_low": np.asarray(env_action_bounds[0]).tolist(),
                                                  "env_action_high": np.asarray(env_action_bounds[1]).tolist()}),
        **(metadata or {}),
    }
    text = json.dumps(info, sort_keys=True)
    data = _onnx_bytes(module, example, inputs, outputs, text) if fmt == "onnx" else _torchscript_bytes(
        module, example, text)
    atomic_write(path, data)
    return ExportedFile(path, fmt, len(data), info)


def _graph(actor: EvalActor, bounds: tuple[np.ndarray, np.ndarray] | None) -> tuple[nn.Module, list[str], list[str]]:
    inputs = ["obs", "state"] if actor.recurrent else ["obs"]
    outputs = ["action", "next_state"] if actor.recurrent else ["action"]
    if bounds is None:
        return actor.module, inputs, outputs
    if actor.action_kind != "continuous" or actor.recurrent:
        raise ExportError(f"export: env action bounds apply to continuous feed-forward actors, not a "
                          f"{actor.action_kind}{' recurrent' if actor.recurrent else ''} one")
    return _WithEnvAction(actor.module, *bounds).eval(), inputs, outputs + ["env_action"]


def _example_inputs(actor: EvalActor, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    obs = torch.zeros((_EXAMPLE_BATCH, *actor.obs_shape), dtype=dtype)
    if actor.state_shape is None:
        return (obs,)
    return obs, torch.zeros((_EXAMPLE_BATCH, *actor.state_shape))


def _onnx_bytes(module: nn.Module, example: tuple[torch.Tensor, ...], inputs: list[str], outputs: list[str],
                text: str) -> bytes:
    missing = [m for m in ("onnx", "onnxscript") if not _importable(m)]
    if missing:
        raise ExportError(f"export: --format onnx needs {' and '.join(missing)} (not installed); install the extra: "
                          "pip install -e '.[onnx]' (or pip install onnx onnxscript onnxruntime)")
    batch = torch.export.Dim("batch", min=1)
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the exporter logs one warning per torchvision op it cannot register
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(module, example, input_names=inputs, output_names=outputs, dynamo=True,
                                        external_data=False, dynamic_shapes=tuple({0: batch} for _ in example),
                                        verbose=False)
    except Exception as e:  # the exporter's own errors are many types; name the model and keep the cause
        raise ExportError(f"export: torch.onnx could not export {type(module).__name__}: {e}") from e
    finally:
        quiet.setLevel(level)
    assert program is not None  # dynamo=True always returns the program
    proto = program.model_proto
    proto.metadata_props.add(key=METADATA_KEY, value=text)
    return proto.SerializeToString()


def _torchscript_bytes(module: nn.Module, example: tuple[torch.Tensor, ...], text: str) -> bytes:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # torch 2.13 marks torch.jit deprecated; the traced file still loads
        traced = torch.jit.trace(module, example, check_trace=False)
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer, _extra_files={TORCHSCRIPT_METADATA: text})
    return buffer.getvalue()


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The description stored in an exported file (ONNX or TorchScript, told apart by its contents)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        head = f.read(2)
    if head == b"PK":  # TorchScript files are zip archives
        extra = {TORCHSCRIPT_METADATA: ""}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.jit.load(path, _extra_files=extra)
        return json.loads(extra[TORCHSCRIPT_METADATA])
    import onnx

    model = onnx.load(path, load_external_data=False)
    for prop in model.metadata_props:
        if prop.key == METADATA_KEY:
            return json.loads(prop.value)
    raise ExportError(f"export: '{path}' holds no ding description (metadata '{METADATA_KEY}'); was it written by "
                      "ding -m export?")
