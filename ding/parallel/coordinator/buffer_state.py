"""The coordinator's replay buffers on disk (``<exp>/parallel_buffer.dat``), so that ``--resume`` continues with them.

The buffers hold metadata only; the samples stay in the data files a saved state keeps. The file is written atomically
in the data files' format (:mod:`ding.torch_utils.codec`: no pickle), so one planted in the run directory can at most
be refused, never run code.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ding.parallel.protocol import DATA_ID
from ding.torch_utils.codec import DecodeLimits, load_file, save_file
from ding.utils import DataFileError, ReplayBufferError

_KIND = "ding coordinator buffers"
# metadata of up to millions of items: far above what one sample may cost, still bounded
_LIMITS = DecodeLimits(max_file_bytes=4 << 30, max_decoded_bytes=4 << 30, max_arrays=10_000_000)
_PICKLED_MAGIC = b"DINGBUF\n"  # a pickled buffer file (buffer_io's save_data), never unpickled here


def save_buffer_state(path: str, buffers: Mapping[str, Any]) -> set[str]:
    """Write the state of every buffer (``{buffer_id: buffer}``); returns the data ids it refers to."""
    states = {buffer_id: buf.state_dict() for buffer_id, buf in buffers.items()}
    save_file({"kind": _KIND, "buffers": states}, path)
    return referenced_data_ids(states)


def load_buffer_state(path: str) -> dict[str, Any]:
    """``{buffer_id: state}`` as saved (a missing file is an empty dict: nothing was saved yet)."""
    if not os.path.lexists(path):
        return {}
    try:
        data = load_file(path, _LIMITS)
    except DataFileError as e:
        old = False
        if os.path.isfile(path) and not os.path.islink(path):  # (never opens a FIFO or follows a link)
            with open(path, "rb") as f:
                old = f.read(len(_PICKLED_MAGIC)) == _PICKLED_MAGIC
        why = ("it is in the pickled format of an older ding, which this ding does not unpickle" if old else str(e))
        raise ReplayBufferError(f"resume: cannot read the coordinator's buffer state {path}: {why}; delete it to "
                                "resume with an empty replay buffer (it refills)") from e
    buffers = data.get("buffers") if isinstance(data, dict) and data.get("kind") == _KIND else None
    if not isinstance(buffers, dict):
        raise ReplayBufferError(f"resume: {path} holds no coordinator buffer state; delete it to start with an empty "
                                "replay buffer")
    return buffers


def referenced_data_ids(states: Mapping[str, Any]) -> set[str]:
    """The data ids the saved buffer states refer to (their files must be kept)."""
    ids: set[str] = set()
    for state in states.values():
        storage = state.get("storage", {}) if isinstance(state, Mapping) else {}
        data, valid = storage.get("data", []), storage.get("valid")
        for slot, item in enumerate(data):
            if isinstance(item, Mapping) and DATA_ID in item and (valid is None or bool(valid[slot])):
                ids.add(str(item[DATA_ID]))
    return ids
