"""BatchReader: a learn task's batches read from their data files (in the task's thread) through a sample store."""
from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass
from itertools import chain
from typing import Any

from easydict import EasyDict

from ding.parallel.files import read_data_file, run_dir, task_of
from ding.parallel.mechanisms import is_on
from ding.parallel.protocol import DATA_ID, LearnerStartTask, LearnTask
from ding.parallel.roles.learner.sample_store import SampleStore
from ding.torch_utils import DecodeLimits
from ding.utils import DataFileError
from ding.utils.data import ColumnBatch
from ding.utils.torch_threads import torch_threads_in_this_thread

_Batch = tuple[list[str], dict[str, list]]  # a batch's data ids at hand, and its metadata columns of those


@dataclass
class ReadBatches:
    """A learn task's batches as read: one :class:`ColumnBatch` of all samples, or each batch's sample dicts."""

    sizes: list[int]  # per batch (0: every file of the batch was skipped)
    envstep: int
    wait_s: float
    skipped_files: int = 0
    columns: ColumnBatch | None = None
    samples: list[list[dict]] | None = None

    def batches(self) -> list[ColumnBatch | list[dict] | None]:
        """Per batch: a view of ``columns``, its sample dicts, or None (nothing to train)."""
        if self.columns is not None:
            parts = iter(self.columns.split([n for n in self.sizes if n]))
            return [next(parts) if n else None for n in self.sizes]
        samples = self.samples or [[] for _ in self.sizes]
        return [batch if batch else None for batch in samples]


class BatchReader:
    """Reads learn tasks' batches for one learner; thread-safe. A missing or damaged file is skipped and counted; a
    damaged one is not read again (data files never change)."""

    def __init__(self, path_data: str, store: SampleStore, limits: DecodeLimits, logger: logging.Logger) -> None:
        self.path_data = path_data
        self.store = store
        self._limits = limits
        self._logger = logger
        self._lock = threading.Lock()  # learn tasks' threads share the store
        self._bad: collections.OrderedDict = collections.OrderedDict()  # ids of damaged/crafted files (oldest first)
        self._skipped = 0

    @classmethod
    def for_task(cls, task: LearnerStartTask, cfg: Any, logger: logging.Logger) -> BatchReader:
        """The reader of a start task's data directory, with the store and decode limits the role's ``cfg`` sets."""
        path_data = run_dir(task.path_data, cfg.get("path_data"), "LearnerStartTask.path_data")
        replay = EasyDict(task.main_config).policy.other.replay_buffer
        buffer_size = int(replay.get("replay_buffer_size", 0) or 0)
        cap_mb = cfg.get("sample_cache_mb")
        cap_mb = min(4096.0, max(256.0, buffer_size / 16)) if cap_mb is None else float(cap_mb)
        # (an A/B benchmark turns the store off with DING_PARALLEL_OFF=sample_cache: ding/parallel/mechanisms.py)
        store = SampleStore(buffer_size if is_on("sample_cache") else 0, max_bytes=int(cap_mb * 2**20))
        max_bytes = int(float(cfg.max_data_file_mb) * (1 << 20))
        limits = DecodeLimits(max_file_bytes=max_bytes, max_decoded_bytes=max_bytes)
        return cls(path_data, store, limits, logger)

    def read(self, task: LearnTask, columns: bool) -> ReadBatches:
        """The task's batches, as one ColumnBatch (``columns``) or as sample dicts."""
        torch_threads_in_this_thread()
        with self._lock:
            fresh: dict[str, Any] = {}  # samples read now (the store may not keep them all)
            read = [self._load(meta, fresh) for meta in task.data]
            gone: set[str] = set()
            # (only reading files puts samples in the store, so only then can it have let go of one this task needs)
            lost = self.store.missing(list(chain.from_iterable(r[0] for r in read if r)), fresh) if fresh else []
            for data_id in lost:  # let go by a store smaller than one task's reads
                if data_id not in fresh and data_id not in gone and not self._read_into(data_id, fresh, again=True):
                    gone.add(data_id)
            if gone:
                read = [_without(r, gone) for r in read]
            skipped, self._skipped = self._skipped, 0
            out = ReadBatches(sizes=[len(r[0]) if r else 0 for r in read], envstep=task.envstep, wait_s=task.wait_s,
                              skipped_files=skipped)
            if not columns:
                out.samples = [_laid_over([self._sample(i, fresh) for i in r[0]], r[1]) if r else [] for r in read]
            elif any(read):  # one ColumnBatch for the whole task: a gather per field, not a stack per field and batch
                keys = list(dict.fromkeys(k for r in read if r for k in r[1]))
                missing = ColumnBatch.MISSING
                extra = {k: list(chain.from_iterable(r[1].get(k, [missing] * len(r[0])) for r in read if r))
                         for k in keys}
                out.columns = self.store.batch(list(chain.from_iterable(r[0] for r in read if r)), extra, fresh)
        return out

    def _sample(self, data_id: str, fresh: dict[str, Any]) -> Any:
        sample = self.store.get(data_id)
        return fresh[data_id] if sample is None else sample

    def _load(self, meta: dict[str, list], fresh: dict[str, Any]) -> _Batch | None:
        """A batch's data ids whose samples are at hand (kept, or read now into ``fresh`` and the store) and their
        metadata; None when every file of the batch was skipped."""
        data_ids = meta[DATA_ID]
        if not self.store.missing(data_ids, fresh):  # (the common case: every sample is kept)
            return list(data_ids), {k: col for k, col in meta.items() if k != DATA_ID}
        ids, kept = [], []
        for pos, raw_id in enumerate(data_ids):
            data_id = str(raw_id)
            if data_id not in self.store and data_id not in fresh:
                if data_id in self._bad:  # a bad file is not read (nor logged) again
                    self._skipped += 1
                    continue
                if not self._read_into(data_id, fresh):
                    continue
            ids.append(data_id)
            kept.append(pos)
        if not ids:
            return None
        whole = len(kept) == len(data_ids)
        return ids, {k: col if whole else [col[i] for i in kept] for k, col in meta.items() if k != DATA_ID}

    def _read_into(self, data_id: str, fresh: dict[str, Any], again: bool = False) -> bool:
        """Read ``data_id``'s whole file into ``fresh`` and (unless read ``again`` in one task) the store; False: the
        file is skipped, counted and logged (and, when damaged, remembered as bad)."""
        task = task_of(data_id)
        where = f"data file '{data_id}'" + (f" (written by collector task '{task}')" if task else "")
        try:
            found = read_data_file(self.path_data, data_id, self._limits)
            self.store.check(found, where)
        except DataFileError as e:
            self._skipped += 1
            if not again and not isinstance(e.__cause__, FileNotFoundError):
                self._bad[data_id] = True
                if len(self._bad) > max(self.store.capacity, 10_000):
                    self._bad.popitem(last=False)
            self._logger.warning(f"skipped a training sample: {e}")
            return False
        fresh.update(found)
        if not again:
            self.store.put(found)
        return True


def _without(read: _Batch | None, gone: set) -> _Batch | None:
    """A batch without the samples of ``gone`` (None: none left)."""
    if read is None or not gone.intersection(read[0]):
        return read
    keep = [j for j, i in enumerate(read[0]) if i not in gone]
    if not keep:
        return None
    return [read[0][j] for j in keep], {k: [col[j] for j in keep] for k, col in read[1].items()}


def _laid_over(stored: list[dict], extra: dict[str, list]) -> list[dict]:
    """Copies of the stored samples with their metadata laid over them."""
    return [{**sample, **{k: col[j] for k, col in extra.items()}} for j, sample in enumerate(stored)]
