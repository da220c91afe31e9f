"""The shared directory: collectors' data files (one sample, data id ``F``, or a task's list, ``F:i``) and the
learner's policy file, written atomically in the :mod:`ding.torch_utils.codec` format, never unpickled, and read as
hostile (regular files only, size caps, a strict structure; every refusal is one :class:`DataFileError`)."""
from __future__ import annotations

import os
import re
from typing import Any

from ding.torch_utils import DEFAULT_LIMITS, DecodeLimits, decode, encode, load_file, save_file
from ding.utils import DataFileError, atomic_write, read_regular_file

POLICY_MAX_BYTES = 1 << 30  # default cap on a policy file and what it holds (comm collector: max_policy_file_mb)
DATA_FILE_MAX_BYTES = 8 << 20  # a collect task's samples go to files of at most this many bytes (or one sample each)

_DATA_ID = re.compile(r"[A-Za-z0-9_.\-]+")
_SAMPLE_ID = re.compile(r"([A-Za-z0-9_.\-]+)(?::(\d{1,9}))?")
# many data ids checked in one match: each a plain file name (not '.' or '..') with an optional ':<index>', one per line
_SAMPLE_IDS = re.compile(r"(?:(?!\.\.?(?::|\n))[A-Za-z0-9_.\-]+(?::\d{1,9})?\n)*")


def split_data_id(data_id: Any) -> tuple[str, int | None]:
    """``(file name, index)`` of a data id: ``'F'`` is the one sample in file ``F``, ``'F:i'`` sample ``i`` of its
    list. The file name must be plain (letters, digits, '_.-', not '.' or '..'), so nothing escapes the directory."""
    m = _SAMPLE_ID.fullmatch(data_id) if isinstance(data_id, str) else None
    if m is None or m.group(1) in (".", ".."):
        raise DataFileError(f"invalid data id {data_id!r:.80}: must be a plain file name of letters, digits, '_.-', "
                            "optionally followed by ':<sample index>'")
    index = m.group(2)
    return m.group(1), None if index is None else int(index)


def task_of(data_id: Any) -> str | None:
    """The collector task that wrote data file ``data_id`` (its files are ``<task_id>_<k>``), or None."""
    try:
        name, _ = split_data_id(data_id)
    except DataFileError:
        return None
    task = name.rsplit("_", 1)[0]
    return task if task != name else None


def data_ids_valid(data_ids: list) -> bool:
    """Whether every item is a valid data id, in one pass (a learn task carries hundreds)."""
    return all(type(i) is str and "\n" not in i for i in data_ids) and \
        _SAMPLE_IDS.fullmatch("".join(i + "\n" for i in data_ids)) is not None


def data_path(path_data: str, data_id: str) -> str:
    return os.path.join(path_data, split_data_id(data_id)[0])


def policy_path(path_policy: str, policy_id: Any) -> str:
    """``path_policy/policy_id``; a policy id is a plain file name like a data id's."""
    if not isinstance(policy_id, str) or not _DATA_ID.fullmatch(policy_id) or policy_id in (".", ".."):
        raise DataFileError(f"invalid policy id {policy_id!r}: must be a plain file name of letters, digits, '_.-'")
    return os.path.join(path_policy, policy_id)


def run_dir(given: Any, expected: Any, what: str) -> str:
    """A shared directory named by a peer's task field ``what``; when this role's config names the run's directory
    (``expected``), the task must name that one, so a peer cannot point a role anywhere else."""
    if not isinstance(given, str) or not given.strip() or "\x00" in given:
        raise DataFileError(f"{what}: expected a directory path, got {given!r}")
    if expected and os.path.realpath(given) != os.path.realpath(str(expected)):
        raise DataFileError(f"{what}: {given!r} is not this run's directory {str(expected)!r} (from this role's "
                            "config); a role reads and writes only the run's own shared directories")
    return given


def learner_load_path(load_path: Any, ckpt_dir: str, what: str = "learner_start_task.load_path") -> str | None:
    """The checkpoint a peer asks the learner to load: ``ckpt_dir`` itself or an ``iteration_N.pth.tar`` in it (the
    learner loads only what it wrote); None for nothing."""
    if load_path is None or load_path == "":
        return None
    if not isinstance(load_path, str) or "\x00" in load_path:
        raise DataFileError(f"{what}: expected a path, got {load_path!r}")
    real, root = os.path.realpath(load_path), os.path.realpath(ckpt_dir)
    if real == root:
        return ckpt_dir
    name = os.path.basename(real)
    if os.path.dirname(real) == root and re.match(r"^iteration_\d+\.pth\.tar$", name):
        return os.path.join(ckpt_dir, name)
    raise DataFileError(f"{what}: {load_path!r} is not the learner's checkpoint directory {ckpt_dir!r} nor an "
                        "iteration_N.pth.tar in it; the learner loads only checkpoints it wrote itself")


def write_data(path_data: str, data_id: str, sample: Any, compress: bool = True) -> int:
    """Write one sample to the data file ``data_id``; returns the file's size."""
    if split_data_id(data_id)[1] is not None:
        raise DataFileError(f"write_data: {data_id!r} names a sample inside a file; give the file name alone")
    return save_file(sample, data_path(path_data, data_id), compress=compress)


def write_samples(path_data: str, file_id: str, samples: list, compress: bool = True,
                  max_bytes: int = DATA_FILE_MAX_BYTES) -> list[str]:
    """Write ``samples`` to as few files of at most ``max_bytes`` as fit (``file_id``, ``file_id.1``, ...; a larger
    one is split in halves down to one sample) and return their data ids in order."""
    if split_data_id(file_id)[1] is not None:
        raise DataFileError(f"write_samples: {file_id!r} must be a plain file name")
    ids: list[str] = []
    pending = [list(samples)]
    part = 0
    while pending:
        chunk = pending.pop(0)
        if not chunk:
            continue
        blob = encode(chunk, compress=compress)
        if len(blob) > max_bytes and len(chunk) > 1:
            half = len(chunk) // 2
            pending[:0] = [chunk[:half], chunk[half:]]
            continue
        name = f"{file_id}.{part}" if part else file_id
        part += 1
        atomic_write(os.path.join(path_data, name), blob, fsync=False)
        ids += [f"{name}:{i}" for i in range(len(chunk))]
    return ids


def read_data(path_data: str, data_id: str, limits: DecodeLimits = DEFAULT_LIMITS) -> Any:
    return read_data_file(path_data, data_id, limits)[data_id]


def read_data_file(path_data: str, data_id: str, limits: DecodeLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Every sample of the data file holding ``data_id``, by data id. The file must hold what its ids say: a sample
    dict for ``'F'``, a list of sample dicts with ``i`` in range for ``'F:i'``."""
    name, index = split_data_id(data_id)
    stored = load_file(os.path.join(path_data, name), limits=limits)
    if index is None:
        if not isinstance(stored, dict):
            raise DataFileError(f"data file {name}: holds a {type(stored).__name__}, not a sample dict")
        return {name: stored}
    if not isinstance(stored, list) or not all(isinstance(x, dict) for x in stored):
        raise DataFileError(f"data file {name}: data id {data_id!r} names sample {index} of a list of sample dicts, "
                            f"but the file holds a {type(stored).__name__}")
    if index >= len(stored):
        raise DataFileError(f"data file {name}: holds {len(stored)} samples, data id {data_id!r} names sample {index}")
    return {f"{name}:{i}": x for i, x in enumerate(stored)}


def write_policy(path: str, model_state: dict, policy_iter: int) -> None:
    """Publish ``{'model': state_dict, 'iter': n}`` at ``path``, atomically and uncompressed (raw tensor bytes
    behind a JSON header: a reload costs about a tenth of ``torch.load``)."""
    atomic_write(path, encode({"model": dict(model_state), "iter": int(policy_iter)}, compress=False), fsync=False)


def read_policy(path: str, max_bytes: int = POLICY_MAX_BYTES) -> dict | None:
    """The published policy ``{'model': {name: tensor}, 'iter': int}``, or None when none exists yet. A file that is
    not regular, is or decodes to more than ``max_bytes``, or has another format or structure is refused."""
    import torch

    try:
        data = read_regular_file(path, max_bytes, what="policy file")
    except FileNotFoundError:
        return None
    limits = DecodeLimits(max_file_bytes=max_bytes, max_decoded_bytes=max_bytes, max_depth=8)
    state = decode(data, where=f"policy file '{path}'", limits=limits)
    if not isinstance(state, dict) or set(state) != {"model", "iter"} or type(state["iter"]) is not int:
        raise DataFileError(f"policy file '{path}' is not a ding policy file (expected exactly the keys 'model' and "
                            "'iter', an int)")
    model = state["model"]
    if not isinstance(model, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in model.items()):
        raise DataFileError(f"policy file '{path}': 'model' must map parameter names to tensors")
    return state


def check_policy_fits(state: dict, model_state: dict, path: str) -> None:
    """Refuse the policy file ``path`` unless its tensors have the names, shapes and dtypes of ``model_state``."""
    model = state["model"]
    missing, unexpected = sorted(set(model_state) - set(model)), sorted(set(model) - set(model_state))
    if missing or unexpected:
        raise DataFileError(f"policy file '{path}' does not fit this model: missing {missing[:5]}, unexpected "
                            f"{unexpected[:5]}")
    for name, ref in model_state.items():
        got = model[name]
        if tuple(got.shape) != tuple(ref.shape) or got.dtype != ref.dtype:
            raise DataFileError(f"policy file '{path}': '{name}' is {got.dtype}{tuple(got.shape)}, this model's is "
                                f"{ref.dtype}{tuple(ref.shape)}")


def to_columns(batch: list[dict]) -> dict[str, list]:
    """A batch of metadata dicts as ``{key: [value per item]}``."""
    keys = list(batch[0]) if batch else []
    return {k: [m.get(k) for m in batch] for k in keys}


def from_columns(batch: dict | list) -> list[dict]:
    """The metadata dicts of a batch given as columns (``to_columns``) or already as a list of dicts."""
    if isinstance(batch, list):
        return batch
    columns = list(batch.values()) if isinstance(batch, dict) else []
    if not columns:
        raise DataFileError(f"a batch must be a list of metadata dicts or a dict of equal-length columns, got "
                            f"{type(batch).__name__}")
    if any(not isinstance(c, list) or len(c) != len(columns[0]) for c in columns):
        raise DataFileError("a batch given as columns needs one list per key, all of the same length")
    return [dict(zip(batch, row)) for row in zip(*columns)]
