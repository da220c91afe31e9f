"""The shared directory of parallel mode: data files written by collectors, the policy file written by the learner.

Both are written atomically (a reader sees the previous file or the whole new one). Data files use the safe sample
format of :mod:`ding.torch_utils.codec`; policy files hold tensors only and load with ``weights_only=True``. Nothing
here ever unpickles arbitrary objects.
"""
from __future__ import annotations

import io
import os
import re
from typing import Any

from ding.torch_utils import load_file, save_file
from ding.utils import DataFileError, atomic_write

_DATA_ID = re.compile(r"^[A-Za-z0-9_.\-]+$")


def data_path(path_data: str, data_id: str) -> str:
    """``path_data/data_id``; a data id is a plain file name (no separators, no '..'), so nothing escapes the
    directory."""
    if not isinstance(data_id, str) or not _DATA_ID.match(data_id) or data_id in (".", ".."):
        raise DataFileError(f"invalid data id {data_id!r}: must be a plain file name of letters, digits, '_.-'")
    return os.path.join(path_data, data_id)


def write_data(path_data: str, data_id: str, sample: Any, compress: bool = True) -> int:
    return save_file(sample, data_path(path_data, data_id), compress=compress)


def read_data(path_data: str, data_id: str) -> Any:
    return load_file(data_path(path_data, data_id))


def write_policy(path: str, model_state: dict, policy_iter: int) -> None:
    """Publish ``{'model': state_dict, 'iter': n}`` at ``path`` (tensors only)."""
    import torch

    buf = io.BytesIO()
    torch.save({"model": model_state, "iter": int(policy_iter)}, buf)
    atomic_write(path, buf.getvalue(), fsync=False)


def read_policy(path: str) -> dict | None:
    """The published policy, or None when none exists yet; a damaged file is a :class:`DataFileError`."""
    import pickle

    import torch

    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError) as e:
        raise DataFileError(f"policy file '{path}' cannot be loaded as tensors ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or "model" not in state or "iter" not in state:
        raise DataFileError(f"policy file '{path}' is not a ding policy file (expected keys 'model' and 'iter')")
    return state


def to_columns(batch: list[dict]) -> dict[str, list]:
    """A batch of metadata dicts as ``{key: [value per item]}``: the same data in a fraction of the JSON."""
    keys = list(batch[0]) if batch else []
    return {k: [m.get(k) for m in batch] for k in keys}


def from_columns(batch: dict | list) -> list[dict]:
    """The metadata dicts of a batch given as columns (``to_columns``) or already as a list of dicts."""
    if isinstance(batch, list):
        return batch
    if not isinstance(batch, dict) or not batch:
        raise DataFileError(f"a batch must be a list of metadata dicts or a dict of equal-length columns, got "
                            f"{type(batch).__name__}")
    columns = list(batch.values())
    n = len(columns[0]) if isinstance(columns[0], list) else -1
    if n < 0 or any(not isinstance(c, list) or len(c) != n for c in columns):
        raise DataFileError("a batch given as columns needs one list per key, all of the same length")
    keys = list(batch)
    return [dict(zip(keys, row)) for row in zip(*columns)]
