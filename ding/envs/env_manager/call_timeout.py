"""Time limits for env calls made in this process (the in-process manager's ``step_timeout`` / ``reset_timeout``).

Python cannot interrupt code running in a thread, and SIGALRM works only in the main thread. So a limited call runs
in a helper thread (one per env) while the caller waits at most the limit. A call past its limit is abandoned: the
caller gets :class:`CallTimeout` at once, the helper thread is left to finish on its own (a daemon thread, never
joined) and then closes the env it was given, and the env is never used again.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()


class CallTimeout(Exception):
    """A limited env call did not finish in time; the env it ran on is abandoned."""


class _Job:
    __slots__ = ("fn", "done", "value", "error")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class _Helper:
    """A daemon thread running one env's calls in order."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            try:
                job.value = job.fn()
            except BaseException as e:  # noqa: BLE001 -- handed to the waiting caller, which re-raises it
                job.error = e
            job.done.set()

    def submit(self, fn: Callable[[], Any]) -> _Job:
        job = _Job(fn)
        self._jobs.put(job)
        return job

    def stop(self, then: Callable[[], Any] | None = None) -> None:
        """End the thread after its current call (running ``then`` first, e.g. closing an abandoned env)."""
        if then is not None:
            self._jobs.put(_Job(then))
        self._jobs.put(_STOP)


class TimedCalls:
    """Run calls per env id with a time limit: ``call(env_id, fn, limit, what)``."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._helpers: dict[int, _Helper] = {}

    def call(self, env_id: int, fn: Callable[[], Any], limit: float, what: str,
             on_abandon: Callable[[], Any] | None = None) -> Any:
        """``fn()`` run in env ``env_id``'s helper thread; its exception is re-raised here. Past ``limit`` seconds
        raise :class:`CallTimeout` naming ``what``; ``on_abandon`` (e.g. the env's close) runs in the helper thread
        once the abandoned call returns, if it ever does."""
        helper = self._helpers.get(env_id)
        if helper is None:
            helper = self._helpers[env_id] = _Helper(f"{self._owner}-env{env_id}")
        job = helper.submit(fn)
        if not job.done.wait(limit):
            del self._helpers[env_id]
            helper.stop(then=on_abandon)
            raise CallTimeout(f"env {env_id}: {what} did not finish within {limit:g}s; the env was abandoned")
        if job.error is not None:
            raise job.error
        return job.value

    def close(self) -> None:
        """Stop every helper thread (each after its current call). Calling it again does nothing."""
        helpers, self._helpers = self._helpers, {}
        for helper in helpers.values():
            helper.stop()
