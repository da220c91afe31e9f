"""Checkpoint files: names, atomic writes, rotation, validated loading, finding the newest good one.

A checkpoint is a dict written with ``torch.save`` (a pickle: load only files you trust)::

    {'model', 'target_model', 'optimizer', ...   # the policy's learn-mode state_dict()
     'last_iter': int, 'last_step': int,         # learner train_iter and collector env step
     'meta': {'ding_version', 'config_hash', 'train_iter', 'envstep', 'time'},
     'extra': {name: state}}                      # state registered with learner.register_checkpoint_extra
"""
from __future__ import annotations

import hashlib
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
    """Write atomically: a crash mid-save leaves the previous file untouched."""
    torch_save_atomic(dict(state), path)


class DamagedCheckpoint(CheckpointError):
    """A checkpoint file that cannot be read (truncated or corrupt); ``reason`` is the short cause."""

    def __init__(self, message: str, path: str, reason: str) -> None:
        super().__init__(message)
        self.path, self.reason = path, reason


def _short_reason(error: BaseException) -> str:
    """PyTorch's read errors run to several lines ("... internal miniz error ..."): the first line, shortened."""
    first = (str(error).strip().splitlines() or [""])[0]
    if len(first) > 100:
        first = first[:97] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def load_checkpoint_file(path: str, map_location: Any = "cpu") -> dict:
    """Read a checkpoint; a missing, truncated, corrupt or foreign file raises ``CheckpointError`` naming it."""
    import torch

    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint file '{path}' does not exist; check the path (e.g. load_ckpt_before_run)")
    if os.path.isdir(path):
        raise CheckpointError(f"checkpoint path '{path}' is a directory; give a file or use find_latest_checkpoint")
    try:
        state = torch.load(path, map_location=map_location, weights_only=False)
    except _READ_ERRORS as e:
        reason = _short_reason(e)
        raise DamagedCheckpoint(
            f"checkpoint file '{path}' cannot be read, it is truncated or corrupt ({reason}). "
            "Use an older checkpoint (find_latest_checkpoint skips damaged ones).", path=path, reason=reason,
        ) from e
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint file '{path}' holds a {type(state).__name__}, not a ding checkpoint dict")
    return state


def find_latest_checkpoint(ckpt_dir: str, logger: logging.Logger | None = None) -> str | None:
    """Path of the newest ``iteration_N.pth.tar`` in ``ckpt_dir`` that loads; None if there is none.

    Damaged newer files are skipped with a warning naming them and the checkpoint used instead.
    """
    found = load_latest_checkpoint(ckpt_dir, logger)
    return None if found is None else found[0]


def load_latest_checkpoint(ckpt_dir: str, logger: logging.Logger | None = None) -> tuple[str, dict] | None:
    """``(path, checkpoint)`` of the newest ``iteration_N.pth.tar`` in ``ckpt_dir`` that loads (see
    :func:`find_latest_checkpoint`); None if there is none."""
    log = logger or _log
    bad: list[str] = []
    for it, path in reversed(list_iteration_checkpoints(ckpt_dir)):
        try:
            state = load_checkpoint_file(path)
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
