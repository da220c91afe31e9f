"""DataLedger: which data files under ``path_data`` may be deleted, and deleting them. A sample is done with when the
buffer lets go of it, but not while a learn task *pins* it nor while sampling (``max_use`` evicts an item as it is
sampled, before it is pinned); a file goes once all its samples are. Failed tasks' files and leftovers are swept."""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import stat
import threading
from collections.abc import Iterable, Iterator

from ding.parallel.files import data_path, split_data_id
from ding.parallel.protocol import COLLECT_TASK_PREFIX
from ding.utils import DataFileError, DingError


class DataLedger:
    """Thread-safe. ``deleted`` (and ``stats['deleted_files']``, when given) counts the files removed."""

    def __init__(self, path_data: str, logger: logging.Logger | None = None,
                 stats: collections.Counter[str] | None = None) -> None:
        self.path_data = path_data
        self._stats = stats
        self._logger = logger or logging.getLogger("ding.coordinator")
        self._lock = threading.Lock()
        self._pins: collections.Counter[str] = collections.Counter()
        self._doomed: set[str] = set()  # data ids the buffer let go of whose files are not deleted yet
        self._sampling = 0
        self._kept: set[str] = set()  # data ids a saved buffer state refers to: their files are never deleted
        self._live: dict[str, set[str]] = {}  # file -> its samples (data ids 'F:i') not done with yet
        self.deleted = 0

    def added(self, data_ids: Iterable[str]) -> None:
        """These samples entered a buffer (a file of several goes once all of them are done with)."""
        with self._lock:
            for data_id in data_ids:
                name, index = _file_of(data_id)
                if name and index is not None:
                    self._live.setdefault(name, set()).add(data_id)

    def check_written(self, data_ids: Iterable[str]) -> str | None:
        """What is wrong with the files a collector says it wrote (None: each is a regular file under ``path_data``)."""
        seen: set[str] = set()
        for data_id in data_ids:
            try:
                name = split_data_id(data_id)[0]
            except DataFileError as e:
                return str(e)
            if name in seen:
                continue
            seen.add(name)
            try:
                mode = os.lstat(data_path(self.path_data, data_id)).st_mode
            except FileNotFoundError:
                return f"{data_id!r}: no such data file"
            except (OSError, DingError) as e:
                return f"{data_id!r}: {e}"
            if not stat.S_ISREG(mode):
                return f"{data_id!r}: not a regular file"
        return None

    @contextlib.contextmanager
    def sampling(self) -> Iterator[None]:
        """While sampling and pinning, evicted files are only noted; they go afterwards."""
        with self._lock:
            self._sampling += 1
        try:
            yield
        finally:
            with self._lock:
                self._sampling -= 1
            self.flush()

    def pin(self, data_ids: Iterable[str]) -> None:
        with self._lock:
            self._pins.update(data_ids)

    def unpin(self, data_ids: Iterable[str]) -> None:
        with self._lock:
            self._pins -= collections.Counter(data_ids)  # (keeps only the counts still above 0)
        self.flush()

    def evicted(self, data_ids: Iterable[str]) -> None:
        with self._lock:
            self._doomed.update(data_ids)
            if self._sampling:
                return
        self.flush()

    def flush(self) -> None:
        with self._lock:
            now = [i for i in self._doomed if self._pins[i] <= 0 and i not in self._kept]
            self._doomed.difference_update(now)
            files = []
            for data_id in now:
                name, index = _file_of(data_id)
                if index is None:  # a file of its own ('': no file)
                    if name:
                        files.append(name)
                    continue
                live = self._live.get(name)
                if live is None:  # never added (cannot happen in a run): left for the sweep, never deleted early
                    continue
                live.discard(data_id)
                if not live:
                    del self._live[name]
                    files.append(name)
        removed = self._delete(files)
        with self._lock:
            self.deleted += removed
            if self._stats is not None:
                self._stats["deleted_files"] += removed

    def keep(self, data_ids: Iterable[str]) -> None:
        """Never delete these files (a saved buffer state refers to them)."""
        with self._lock:
            self._kept.update(data_ids)

    @property
    def pinned(self) -> int:
        with self._lock:
            return len(self._pins)

    @property
    def doomed(self) -> int:
        with self._lock:
            return len(self._doomed)

    def drop_task(self, task_id: str) -> int:
        """Delete the files a failed collector task wrote (``<task_id>_*``)."""
        return self._delete([n for n in self._listdir() if n.startswith(f"{task_id}_")])

    def sweep(self) -> int:
        """Delete every collector data file left that is not kept."""
        with self._lock:
            kept = {_file_of(i)[0] for i in self._kept}
        return self._delete([n for n in self._listdir() if n.startswith(COLLECT_TASK_PREFIX) and n not in kept])

    def _listdir(self) -> list[str]:
        try:
            return os.listdir(self.path_data)
        except FileNotFoundError:
            return []

    def _delete(self, names: list[str]) -> int:
        removed = 0
        for name in names:
            try:
                path = data_path(self.path_data, name)
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    self._logger.warning(f"data file {name!r} under {self.path_data} is not a regular file; left alone")
                    continue
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                pass
            except Exception as e:  # noqa: BLE001 -- one file that cannot go must not stop the others
                self._logger.warning(f"could not delete data file {name!r} under {self.path_data}: {e}")
        return removed


def _file_of(data_id: str) -> tuple[str, int | None]:
    """``split_data_id``, with ``('', None)`` for an id that is none (nothing of it is ever deleted)."""
    try:
        return split_data_id(data_id)
    except DataFileError:
        return "", None
