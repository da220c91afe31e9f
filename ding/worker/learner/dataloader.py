"""The learner's parallel-mode data source: ``get_data(batch_size)`` as an iterator, optionally prefetched."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from ding.utils.torch_threads import torch_threads_in_this_thread

_STOP = object()


def _resolve(batch: Any) -> Any:
    """``get_data`` may return loader callables (parallel mode reads data files lazily); call them."""
    if isinstance(batch, list):
        return [item() if callable(item) else item for item in batch]
    return batch


class LearnerDataLoader:
    """Iterate over batches from ``get_data(batch_size)``.

    ``num_workers=0`` fetches on demand; ``num_workers>=1`` prefetches up to that many batches in one background
    thread (errors there are re-raised by ``next``). ``get_data`` returning None ends the iteration.
    """

    def __init__(self, get_data: Callable[[int], Any], batch_size: int, num_workers: int = 0) -> None:
        self._get_data = get_data
        self._batch_size = batch_size
        self._closed = False
        self._thread: threading.Thread | None = None
        if num_workers > 0:
            self._queue: queue.Queue = queue.Queue(maxsize=num_workers)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._work, name="ding-learner-dataloader", daemon=True)
            self._thread.start()

    def _fetch(self) -> Any:
        return _resolve(self._get_data(self._batch_size))

    def _work(self) -> None:
        torch_threads_in_this_thread()
        while not self._stop.is_set():
            try:
                item: Any = self._fetch()
            except Exception as e:  # handed to the consumer, which re-raises it
                item = e
            if item is None:
                item = _STOP
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if item is _STOP or isinstance(item, Exception):
                return

    def __iter__(self) -> LearnerDataLoader:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        if self._thread is None:
            batch = self._fetch()
            if batch is None:
                raise StopIteration
            return batch
        item = self._queue.get()
        if item is _STOP:
            raise StopIteration
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        """Stop the prefetch thread (idempotent). A thread blocked inside ``get_data`` is left as a daemon."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5.0)
