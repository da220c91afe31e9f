"""ReplayBuffers: the coordinator's buffers of metadata (one per ``buffer_id``), their data files (:class:`DataLedger`)
and their state for ``--resume``, saved atomically in the data files' format: a planted file is refused, never run."""
from __future__ import annotations

import collections
import copy
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ding.parallel.coordinator.data_ledger import DataLedger
from ding.parallel.files import data_path, task_of
from ding.parallel.protocol import DATA_ID
from ding.torch_utils.codec import DecodeLimits, load_file, save_file
from ding.utils import DataFileError, ReplayBufferError
from ding.worker.replay_buffer import create_buffer

_MAX_WRITERS_KEPT = 100_000  # collect tasks whose collector is remembered (to name it in errors)
BUFFER_STATE_FILE = "parallel_buffer.dat"  # under the run directory, read back by --resume
BUFFER_SAVE_INTERVAL_S = 5.0  # the buffers' state is saved at evaluations at most this often (and at the end)
_KIND = "ding coordinator buffers"
# metadata of up to millions of items: far above what one sample may cost, still bounded
_LIMITS = DecodeLimits(max_file_bytes=4 << 30, max_decoded_bytes=4 << 30, max_arrays=10_000_000)
_PICKLED_MAGIC = b"DINGBUF\n"  # a pickled buffer file (buffer_io's save_data), never unpickled here


class ReplayBuffers:
    def __init__(self, buffer_cfg: Mapping, exp_name: str, path_data: str, logger: logging.Logger, tb: Any,
                 stats: collections.Counter[str]) -> None:
        self._buffer_cfg, self._exp_name, self._path_data = buffer_cfg, exp_name, path_data
        self._logger, self._tb, self._stats = logger, tb, stats
        self._lock = threading.RLock()
        self._buffers: dict[str, Any] = {}
        self._writer_of: collections.OrderedDict[str, str] = collections.OrderedDict()  # collect task -> collector
        self.ledger = DataLedger(path_data, logger, stats)
        self.state_file = os.path.join(exp_name, BUFFER_STATE_FILE)
        self._saved_at = -math.inf

    def get(self, buffer_id: str) -> Any:
        with self._lock:
            if buffer_id not in self._buffers:
                cfg: Any = copy.deepcopy(self._buffer_cfg)
                cfg.enable_track_used_data = True  # evicted metadata means a data file to delete
                buf: Any = create_buffer(cfg, tb_logger=self._tb, exp_name=self._exp_name, instance_name=buffer_id)
                buf.set_used_data_callback(self._evicted)
                self._buffers[buffer_id] = buf
            return self._buffers[buffer_id]

    def count(self) -> int:
        with self._lock:
            return sum(b.count() for b in self._buffers.values())

    def _evicted(self, items: list) -> None:
        self.ledger.evicted(_data_ids(items))

    def push(self, buffer_id: str, task_id: str, collector: str, items: list[dict], envstep: int) -> None:
        self._writer_of[task_id] = collector
        while len(self._writer_of) > _MAX_WRITERS_KEPT:
            self._writer_of.popitem(last=False)
        self.ledger.added(_data_ids(items))  # (before the push: a full buffer may let go of some of them at once)
        self.get(buffer_id).push(items, cur_collector_envstep=envstep)

    def sample(self, buffer_id: str, batch_size: int, learner_iter: int, n_batches: int,
               may_train: Callable[[int], bool], served: Callable[[], None]) -> list[list[dict]]:
        """Up to ``n_batches`` batches while ``may_train(buffer count)``, ``served()`` after each; their data files
        are pinned until ``ledger.unpin``."""
        buf = self.get(buffer_id)
        batches: list[list[dict]] = []
        with self._lock, self.ledger.sampling():  # sample and pin in one step: no file of a sampled item can go
            while len(batches) < n_batches and may_train(buf.count()):
                meta = buf.sample(batch_size, learner_iter)
                if meta is None:
                    break
                served()
                self.ledger.pin(m[DATA_ID] for m in meta)
                batches.append(meta)
        return batches

    def writers(self, data_ids: Iterable[str]) -> str:
        """The collectors that wrote these data files, in words."""
        ids = list(data_ids)
        names = sorted({self._writer_of.get(task_of(i) or "", "") for i in ids} - {""})
        return ", ".join(f"collector '{n}'" for n in names) if names else f"{len(ids)} data file(s)"

    def restore(self) -> str:
        """Load the saved buffers (``--resume``); returns what happened, in words."""
        states = load_buffer_state(self.state_file)
        for buffer_id, state in states.items():
            self.get(buffer_id).load_state_dict(state)
        ids = referenced_data_ids(states)
        self.ledger.keep(ids)
        swept = self.ledger.sweep()  # files no saved item refers to (tasks that ended after the save)
        self.ledger = DataLedger(self._path_data, self._logger, self._stats)  # a fresh ledger: kept ids may go again
        self.ledger.added(ids)
        missing = 0
        for data_id in ids:
            try:
                missing += not os.path.exists(data_path(self._path_data, data_id))
            except DataFileError:
                missing += 1
        return (f"resumed the replay buffer: {len(ids):,} items ({missing:,} of their files are gone and will be "
                f"skipped); {swept:,} stray data files removed")

    def save(self, min_interval: float = 0.0) -> set[str]:
        """Write the buffers' state (at most every ``min_interval`` seconds); returns the data ids it refers to."""
        now = time.monotonic()
        if now - self._saved_at < min_interval:
            return set()
        with self._lock:
            ids = save_buffer_state(self.state_file, dict(self._buffers))
        self._saved_at = now
        return ids

    def close(self, keep: bool) -> None:
        """``keep`` (the run can be continued): save the buffers and keep their files; else delete both."""
        with self._lock:
            buffers = list(self._buffers.values())
        if buffers and keep:
            self.ledger.keep(self.save())
        elif os.path.exists(self.state_file):
            os.unlink(self.state_file)
        for buf in buffers:
            buf.close()  # evicts everything: the data files not kept go with it
        self.ledger.sweep()


def _data_ids(items: Iterable[Any]) -> list[str]:
    return [item[DATA_ID] for item in items if isinstance(item, Mapping) and DATA_ID in item]


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
