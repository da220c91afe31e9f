"""Background prefetching of a data iterator onto a device (DI-engine's ``CudaFetcher``), and the learner's
``LogDict`` (DI-engine's ``build_log_buffer``)."""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Iterator

import torch

from .data_helper import to_device, to_list


class CudaFetcher:
    """Iterate ``data_source`` in a background thread, moving each item to ``device`` ahead of its use.

    ``run()`` starts the thread; ``next(fetcher)`` returns the items in order (up to ``queue_size`` are held
    ready; when the queue is full the thread waits ``sleep`` seconds between tries); ``close()`` stops and joins
    the thread. The end of ``data_source`` ends the iteration with StopIteration; an error in it is raised by
    ``next``. Works with any device (named for DI-engine's CUDA use).
    """

    _END = object()

    def __init__(self, data_source: Iterator[Any], device: str | torch.device, queue_size: int = 4,
                 sleep: float = 0.1) -> None:
        self._source, self._device, self._sleep = data_source, device, float(sleep)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, int(queue_size)))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        if self._thread is not None:
            raise RuntimeError("CudaFetcher.run: already running")
        self._thread = threading.Thread(target=self._producer, name="CudaFetcher", daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=self._sleep)
                return True
            except queue.Full:
                time.sleep(0)
        return False

    def _producer(self) -> None:
        try:
            for item in self._source:
                if not self._put(to_device(item, self._device)):
                    return
        except BaseException as e:  # noqa: BLE001 -- handed to the consumer, raised by __next__
            self._put(e)
            return
        self._put(self._END)

    def __iter__(self) -> CudaFetcher:
        return self

    def __next__(self) -> Any:
        if self._thread is None:
            raise RuntimeError("CudaFetcher: call run() before next()")
        while True:
            try:
                item = self._queue.get(timeout=1.0)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise StopIteration from None
        if item is self._END:
            self._queue.put(self._END)  # later calls stop too
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None


class LogDict(dict):
    """A dict that stores tensors as plain lists (``to_list``), on item assignment and ``update`` alike: what a
    learner logs never keeps a graph or a device buffer alive."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, to_list(value) if isinstance(value, torch.Tensor) else value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def build_log_buffer() -> LogDict:
    """An empty :class:`LogDict`."""
    return LogDict()
