"""Checkpoint files: names, atomic writes, rotation, validated loading, finding the newest good one.

A checkpoint is a dict written with ``torch.save``::

    {'model', 'target_model', 'optimizer', ...   # the policy's learn-mode state_dict()
     'last_iter': int, 'last_step': int,         # learner train_iter and collector env step
     'meta': {'ding_version', 'config_hash', 'train_iter', 'envstep', 'time'},
     'extra': bytes}                              # pack_extra of {name: state} (learner.register_checkpoint_extra)

Trust: everything but ``extra`` is tensors and plain values, so every reader loads the file tensors-only
(``torch.load(weights_only=True)``, safe from torch 2.6). ``extra`` is the run state of a serial run's exact resume
(envs, buffer, RNG: arbitrary objects), kept as an opaque blob that only ``allow_pickle=True`` unpickles: the serial
resume of the run's own files. Nothing that loads a checkpoint written by another process ever unpickles it.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import os
import pickle
import re
import zipfile
from collections.abc import Mapping
from typing import Any

from ding.utils import CheckpointError, torch_save_atomic

CKPT_BEST_NAME = "ckpt_best.pth.tar"
COLLECTOR_CKPT_DIR = "collector_ckpt"  # <exp_name>/collector_ckpt/: parallel-mode collectors' best policy (not ckpt/)
RESERVED_KEYS = ("last_iter", "last_step", "meta", "extra")  # checkpoint keys that are not the policy's state
_ITER_RE = re.compile(r"^iteration_(\d+)\.pth\.tar$")
_log = logging.getLogger(__name__)

# What a damaged or foreign file makes torch.load raise.
_READ_ERRORS = (
    RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile, ImportError, AttributeError
)


def iteration_ckpt_name(train_iter: int) -> str:
    return f"iteration_{train_iter}.pth.tar"


def list_iteration_checkpoints(ckpt_dir: str) -> list[tuple[int, str]]:
    """``(iteration, path)`` of every ``iteration_N.pth.tar`` in ``ckpt_dir``, oldest first."""
    if not os.path.isdir(ckpt_dir):
        return []
    found = []
    for name in os.listdir(ckpt_dir):
        m = _ITER_RE.match(name)
        if m:
            found.append((int(m.group(1)), os.path.join(ckpt_dir, name)))
    return sorted(found)


def save_checkpoint_file(state: Mapping[str, Any], path: str) -> None:
    """Write atomically: a crash mid-save leaves the previous file untouched. A dict ``extra`` is stored as an opaque
    blob (see the module docstring), so the file itself loads tensors-only."""
    state = dict(state)
    if isinstance(state.get("extra"), Mapping):
        state["extra"] = pack_extra(state["extra"])
    torch_save_atomic(state, path)


class DamagedCheckpoint(CheckpointError):
    """A checkpoint file that cannot be read (truncated or corrupt); ``reason`` is the short cause."""

    def __init__(self, message: str, path: str = "", reason: str = "") -> None:  # (re-raised with a new message)
        super().__init__(message)
        self.path, self.reason = path, reason or message


def _short_reason(error: BaseException) -> str:
    """PyTorch's read errors run to several lines ("... internal miniz error ..."): the first line, shortened."""
    first = (str(error).strip().splitlines() or [""])[0]
    if len(first) > 100:
        first = first[:97] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def best_checkpoint(run_dir: str) -> str | None:
    """The best-evaluation checkpoint of the run in ``run_dir``: ``ckpt/ckpt_best.pth.tar`` (serial mode), else
    ``collector_ckpt/ckpt_best.pth.tar`` (parallel mode); None if neither exists."""
    for sub in ("ckpt", COLLECTOR_CKPT_DIR):
        path = os.path.join(run_dir, sub, CKPT_BEST_NAME)
        if os.path.isfile(path):
            return path
    return None


# ``extra`` blobs of this format start with this; older ones are torch.save archives (they start with b"PK")
EXTRA_PICKLE_MAGIC = b"DINGXTR1"


def pack_extra(extra: Mapping[str, Any]) -> bytes:
    """The run state of a checkpoint as the opaque blob stored under ``extra``: the standard library's pickle, with
    plain CPU tensors stored as numpy arrays (:func:`_reduce_tensor`).

    ``torch.save`` calls a Python function for every object it pickles; a replay buffer's state is hundreds of
    thousands of small objects, written again every ``save_ckpt_after_iter`` iterations, and the standard library's
    pickle writes them without those calls (docs/benchmarks.md, Checkpoints, has the figures). Shared objects stay
    shared (pickle keeps one copy of an object referenced twice: the frames of a frame-sharing buffer); two
    different tensor views of one storage come back as copies."""
    import copyreg

    import torch

    buf = io.BytesIO()
    buf.write(EXTRA_PICKLE_MAGIC)
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = copyreg.dispatch_table.copy()  # this pickler's own table
    pickler.dispatch_table[torch.Tensor] = _reduce_tensor
    pickler.dump(dict(extra))
    return buf.getvalue()


def unpack_extra(blob: bytes, map_location: Any = "cpu") -> Any:
    """The run state :func:`pack_extra` stored (or an older ``torch.save`` blob). Unpickles: only for files of the
    process's own run (see the module docstring)."""
    import torch

    if blob[:len(EXTRA_PICKLE_MAGIC)] == EXTRA_PICKLE_MAGIC:
        return pickle.loads(memoryview(blob)[len(EXTRA_PICKLE_MAGIC):])  # noqa: S301 -- the run's own file
    return torch.load(io.BytesIO(blob), map_location=map_location, weights_only=False)


def _reduce_tensor(t: Any) -> tuple:
    """Pickle a plain CPU tensor as its numpy array (C-speed, and loaded without torch's storage machinery); any
    other tensor (on a GPU, needing grad, a dtype numpy lacks such as bfloat16, sparse, quantized) the way torch
    pickles it."""
    import torch

    if (type(t) is torch.Tensor and t.device.type == "cpu" and t.layout is torch.strided and not t.requires_grad
            and t.dtype in _numpy_dtypes() and not t.is_conj() and not t.is_neg()):
        return _tensor_from_numpy, (t.numpy(),)
    return t.__reduce_ex__(pickle.HIGHEST_PROTOCOL)


def _tensor_from_numpy(array: Any) -> Any:
    import torch

    return torch.from_numpy(array)


@functools.cache
def _numpy_dtypes() -> frozenset:
    """The torch dtypes a numpy array can hold (looked up once; torch is imported only when a checkpoint is made)."""
    import torch

    return frozenset((torch.float16, torch.float32, torch.float64, torch.uint8, torch.int8, torch.int16, torch.int32,
                      torch.int64, torch.bool, torch.complex64, torch.complex128))


def load_checkpoint_file(path: str, map_location: Any = "cpu", allow_pickle: bool = False) -> dict:
    """Read a checkpoint; a missing, truncated, corrupt or foreign file raises ``CheckpointError`` naming it.

    The file is loaded tensors-only: its ``extra`` run state stays an opaque ``bytes`` blob. ``allow_pickle=True``
    (only for files this process's own run wrote: the serial resume) unpickles the file in full and ``extra`` back
    into a dict, also for checkpoints of older ding versions that stored it unwrapped.
    """
    import torch

    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint file '{path}' does not exist; check the path (e.g. load_ckpt_before_run)")
    if os.path.isdir(path):
        raise CheckpointError(f"checkpoint path '{path}' is a directory; give a file or use find_latest_checkpoint")
    try:
        state = torch.load(path, map_location=map_location, weights_only=not allow_pickle)
        if allow_pickle and isinstance(state, dict) and isinstance(state.get("extra"), (bytes, bytearray)):
            state["extra"] = unpack_extra(state["extra"], map_location)
    except pickle.UnpicklingError as e:
        found = re.search(r"unsupported (?:global: )?GLOBAL (\S+)", str(e), re.IGNORECASE)
        if not allow_pickle and found:
            raise CheckpointError(
                f"checkpoint file '{path}' holds pickled objects besides tensors ({found.group(1)}), and checkpoints "
                "are loaded "
                "tensors-only (ding never unpickles a file another process could have written). A checkpoint of an "
                "older ding version keeps its run state this way: resume that run in serial mode, or, if you trust "
                "the file, load it with load_checkpoint_file(path, allow_pickle=True) and save its 'model' again."
            ) from e
        raise _unreadable(path, e) from e
    except _READ_ERRORS as e:
        raise _unreadable(path, e) from e
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint file '{path}' holds a {type(state).__name__}, not a ding checkpoint dict")
    return state


def _unreadable(path: str, e: BaseException) -> DamagedCheckpoint:
    reason = _short_reason(e)
    return DamagedCheckpoint(
        f"checkpoint file '{path}' cannot be read, it is truncated or corrupt ({reason}). "
        "Use an older checkpoint (find_latest_checkpoint skips damaged ones).", path=path, reason=reason,
    )


def find_latest_checkpoint(ckpt_dir: str, logger: logging.Logger | None = None,
                           allow_pickle: bool = False) -> str | None:
    """Path of the newest ``iteration_N.pth.tar`` in ``ckpt_dir`` that loads; None if there is none.

    Damaged newer files are skipped with a warning naming them and the checkpoint used instead. ``allow_pickle`` as
    in :func:`load_checkpoint_file`.
    """
    found = load_latest_checkpoint(ckpt_dir, logger, allow_pickle)
    return None if found is None else found[0]


def load_latest_checkpoint(ckpt_dir: str, logger: logging.Logger | None = None,
                           allow_pickle: bool = False) -> tuple[str, dict] | None:
    """``(path, checkpoint)`` of the newest ``iteration_N.pth.tar`` in ``ckpt_dir`` that loads (see
    :func:`find_latest_checkpoint`); None if there is none."""
    log = logger or _log
    bad: list[str] = []
    for it, path in reversed(list_iteration_checkpoints(ckpt_dir)):
        try:
            state = load_checkpoint_file(path, allow_pickle=allow_pickle)
        except CheckpointError as e:
            bad.append(os.path.basename(path))
            why = e.reason if isinstance(e, DamagedCheckpoint) else str(e)
            log.warning(f"skipping damaged checkpoint '{path}' ({why})")  # the older one is chosen below
            continue
        if bad:
            log.warning(f"checkpoint(s) {', '.join(bad)} are damaged; using iteration_{it}, the last good checkpoint")
        return path, state
    if bad:
        log.warning(f"no usable checkpoint in '{ckpt_dir}': every iteration_N.pth.tar is damaged ({', '.join(bad)})")
    return None


def load_policy_state(policy: Any, state: Mapping[str, Any], path: str) -> None:
    """Load a checkpoint's policy part into ``policy`` (a mode view); a misfit raises ``CheckpointError`` naming
    ``path`` and the parameter."""
    policy_state = {k: v for k, v in state.items() if k not in RESERVED_KEYS}
    try:
        policy.load_state_dict(policy_state)
    except (RuntimeError, KeyError, ValueError, TypeError) as e:
        raise CheckpointError(f"checkpoint '{path}' does not fit the policy: {e}") from e


def rotate_checkpoints(ckpt_dir: str, keep_last: int | None) -> list[str]:
    """Delete all but the newest ``keep_last`` ``iteration_N.pth.tar`` files (``ckpt_best`` and others are kept).

    ``keep_last`` None or <= 0 keeps everything. Returns the removed paths.
    """
    if not keep_last or keep_last <= 0:
        return []
    files = list_iteration_checkpoints(ckpt_dir)
    removed = []
    for _, path in files[:-keep_last]:
        try:
            os.remove(path)
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


def config_hash(cfg: Any) -> str:
    """A short stable hash of a config (to tell later which config a checkpoint came from)."""
    text = json.dumps(_plain(cfg), sort_keys=True, default=repr)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def _plain(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x
