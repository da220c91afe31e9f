"""The coordinator's replay buffers on disk, so that ``--resume`` after a crash continues with them.

The coordinator's buffers hold metadata only (data ids, priorities, use counts); the samples stay in their data files
under ``path_data``. The state of every buffer is written atomically to ``<exp>/parallel_buffer.dat`` (the
``save_data`` file format of :mod:`ding.worker.replay_buffer.buffer_io`) at evaluations and at the end of a run that
can be continued, and the files it names are kept. Only the coordinator writes and reads this file (it is pickle:
like a serial run's checkpoint, it is the run's own state, never a peer's).

Items evicted between the last save and a crash lost their files: after a resume the learner skips them like any
missing sample, and the buffer refills.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..parallel_protocol import DATA_ID
from ..replay_buffer.buffer_io import read_buffer_file, write_buffer_file

BUFFER_STATE_FILE = "parallel_buffer.dat"


def buffer_state_path(exp_name: str) -> str:
    return os.path.join(exp_name, BUFFER_STATE_FILE)


def save_buffer_state(path: str, buffers: Mapping[str, Any]) -> set[str]:
    """Write the state of every buffer (``{buffer_id: buffer}``); returns the data ids it refers to."""
    states = {buffer_id: buf.state_dict() for buffer_id, buf in buffers.items()}
    write_buffer_file(path, "coordinator", [], buffers=states)
    return referenced_data_ids(states)


def load_buffer_state(path: str) -> dict[str, Any]:
    """``{buffer_id: state}`` as saved (a missing file is an empty dict: nothing was saved yet)."""
    if not os.path.exists(path):
        return {}
    buffers = read_buffer_file(path).get("buffers")
    if not isinstance(buffers, dict):
        from ding.utils import ReplayBufferError

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
