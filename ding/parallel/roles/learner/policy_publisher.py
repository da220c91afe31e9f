"""PolicyPublisher: writes the parallel learner's policy file for the collectors, off the training thread."""
from __future__ import annotations

import threading
import time

from ding.parallel.files import write_policy
from ding.utils.torch_threads import torch_threads_in_this_thread


class PolicyPublisher:
    """Publish ``{'model': tensors, 'iter': n}`` at ``path``, atomically.

    :meth:`publish_soon` hands a snapshot to a writer thread (only the newest waiting one is written), so training
    never waits for the file system; :meth:`publish_now` writes at once. A failed write is raised by the next publish.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.written_iter = -1  # the iteration of the policy file on disk (what collectors can read)
        self.handed_iter = -1  # the iteration last handed over (written, or queued), and its time.monotonic()
        self.handed_at = float("-inf")
        self._lock = threading.Lock()  # guards _pending / _closed
        self._write_lock = threading.Lock()  # one write at a time, and never an older policy over a newer one
        self._pending: tuple[dict, int] | None = None
        self._wake = threading.Event()
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def publish_now(self, model_state: dict, policy_iter: int) -> None:
        """Write the policy at once (it wins over anything still queued)."""
        self._raise_error()
        with self._lock:
            self._pending = None
        self.handed_iter, self.handed_at = policy_iter, time.monotonic()
        self._write(model_state, policy_iter)

    def publish_soon(self, model_state: dict, policy_iter: int) -> None:
        """Snapshot the tensors and let the writer thread publish them."""
        self._raise_error()
        snapshot = {k: v.detach().clone() if hasattr(v, "detach") else v for k, v in model_state.items()}
        with self._lock:
            if self._closed:
                return
            self._pending = (snapshot, policy_iter)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ding-policy-publisher", daemon=True)
                self._thread.start()
        self.handed_iter, self.handed_at = policy_iter, time.monotonic()
        self._wake.set()

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, stop the writer thread (idempotent)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout)

    def _write(self, model_state: dict, policy_iter: int) -> None:
        with self._write_lock:
            if policy_iter < self.written_iter:
                return  # a snapshot the writer took before a newer policy was written at once
            write_policy(self.path, model_state, policy_iter)
            self.written_iter = policy_iter

    def _run(self) -> None:
        torch_threads_in_this_thread()
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                item, self._pending = self._pending, None
                closed = self._closed
            if item is not None:
                try:
                    self._write(*item)
                except Exception as e:  # noqa: BLE001 -- raised by the next publish, in the training thread
                    self._error = e
                    return
            if closed:
                return

    def _raise_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError(f"publishing the policy to {self.path} failed: {type(err).__name__}: {err}") from err
