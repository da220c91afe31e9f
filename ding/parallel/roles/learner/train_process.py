"""The learner's training process: the learner's tasks run in a process of their own, apart from its HTTP server.

A learner in parallel mode does two kinds of work: it trains (the run's pace), and it serves the coordinator (HTTP
requests, JSON, checking each task, posting each answer). Both are Python and so share one GIL in one process: the
second kind took 1.1-1.7 ms per train iteration in the learner's other threads, and the training thread waited for the
GIL while they ran, even with a core of its own (docs/benchmarks.md, Parallel mode). So the comm learner forks this
process when it is built, before any of its threads start, and relays each task record to it through a pipe; the
process runs the learner's task handlers (build the learner, train, publish the policy, write checkpoints) exactly as
the comm learner would in its own process, and sends back each answer record or the error. The learn tasks' data files
are read, and their batches stacked, by the comm learner before it relays them (``ReadBatches``): that work is the
training process's neighbours' on the other cores, not its own.

Records travel pickled through the pipe between the two halves of one role (both written by ding, in one process
tree); nothing a peer sends is unpickled: the comm learner checks every task with ``from_json`` before relaying it.

The training process ignores SIGINT and SIGTERM (the comm learner decides when it stops, and asks it to write its
checkpoint first) and dies with its parent (``PR_SET_PDEATHSIG``; and it exits when the pipe closes).
"""
from __future__ import annotations

import itertools
import logging
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe
from typing import Any

from ding.utils.process_helper import end_forked_child, flush_std_streams

_PR_SET_PDEATHSIG = 1
_CALL, _CLOSE = "call", "close"  # parent -> child
_DONE, _FAILED = "done", "failed"  # child -> parent


class TrainProcessTraceback(Exception):
    """The traceback of an error in the training process (the cause of the error :meth:`TrainProcess.call`
    raises)."""


class TrainProcessGone(RuntimeError):
    """The training process is not there (it exited or was killed); names its exit status."""


def can_split() -> str | None:
    """Why the learner cannot run its tasks in a process of its own here (None: it can)."""
    if not hasattr(os, "fork"):
        return "os.fork is not available on this platform"
    return None


class TrainProcess:
    """The parent's handle: :meth:`call` runs a task record's handler in the training process and returns its answer
    record (or raises its error); :meth:`close` asks it to finish (its handlers' close) and reaps it.

    ``make_handlers`` runs in the child, once: it builds the object that handles the tasks there and returns
    ``(handlers, close)``: a map from task record type to handler, and what to call before the process exits.
    ``on_gone(why)`` is called when the process exits without :meth:`close` (killed, out of memory, crashed)."""

    def __init__(self, name: str, make_handlers: Callable[[], tuple[dict[type, Callable[[Any], Any]],
                                                                   Callable[[], None]]],
                 on_gone: Callable[[str], None] | None = None) -> None:
        self.name = name
        self._on_gone = on_gone  # called (in the reader thread) when the process exits without being asked to
        self._closing = False
        self._logger = logging.getLogger(f"ding.learner_slave.{name}")
        parent_end, child_end = Pipe(duplex=True)
        flush_std_streams()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child; its work is covered through the parent's calls)
            parent_end.close()
            _child_main(child_end, make_handlers, trainer_process_name(name), name)
        child_end.close()
        self.pid = pid
        self._conn: Connection = parent_end
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._pending: dict[int, list[Any]] = {}  # request id -> [event, outcome]
        self._gone: str | None = None
        self._exit_status: int | None = None
        self._reap_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"ding-{name}-trainpipe", daemon=True)
        self._reader.start()

    # ---------------------------------------------------------------- calls
    def call(self, record: Any, timeout: float) -> Any:
        """The answer record of the training process's handler of ``record`` (its error raised as a RuntimeError
        carrying the training process's traceback); :class:`TrainProcessGone` if the process is gone, TimeoutError
        if it did not answer within ``timeout`` seconds."""
        event = threading.Event()
        slot: list[Any] = [event, None]
        with self._lock:
            if self._gone is not None:
                raise TrainProcessGone(self._gone)
            request = next(self._ids)
            self._pending[request] = slot
        try:
            with self._send_lock:
                self._conn.send((_CALL, request, record))
        except (OSError, EOFError, BrokenPipeError) as e:
            with self._lock:
                self._pending.pop(request, None)
            raise TrainProcessGone(self._gone or f"learner '{self.name}': its training process is gone ({e})") from e
        if not event.wait(timeout):
            with self._lock:
                self._pending.pop(request, None)
            raise TimeoutError(f"learner '{self.name}': its training process did not answer {type(record).__name__} "
                               f"within {timeout:g} s")
        kind, value = slot[1]
        if kind == _DONE:
            return value
        if kind == _FAILED:
            name, message, remote = value
            raise RuntimeError(message if name == "RuntimeError" else f"{name}: {message}") from \
                TrainProcessTraceback(f"in the learner's training process (pid {self.pid}):\n{remote}")
        raise TrainProcessGone(value)

    def _read(self) -> None:
        """The parent's reader: answers go to their waiting calls; at EOF every waiting call fails."""
        while True:
            try:
                kind, request, value = self._conn.recv()
            except (EOFError, OSError):
                break
            except Exception as e:  # noqa: BLE001 -- an answer that cannot be read fails the calls, never the reader
                self._logger.error(f"learner '{self.name}': unreadable answer from the training process: {e!r}")
                break
            with self._lock:
                slot = self._pending.pop(request, None)
            if slot is not None:
                slot[1] = (kind, value)
                slot[0].set()
        status = self._reap(block=True, timeout=2.0)  # the pipe closes as the process exits: its status follows
        why = f"learner '{self.name}': its training process (pid {self.pid}) exited" + \
            (f" with {_describe(status)}" if status is not None else "")
        with self._lock:
            self._gone = self._gone or why
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot[1] = ("gone", self._gone)
            slot[0].set()
        if not self._closing and self._on_gone is not None:
            self._on_gone(self._gone)

    # ---------------------------------------------------------------- ending
    @property
    def alive(self) -> bool:
        return self._gone is None

    def close(self, timeout: float) -> None:
        """Ask the training process to close (its learner writes a checkpoint), wait up to ``timeout`` seconds for it
        to exit, then kill it. Idempotent."""
        self._closing = True
        try:
            with self._send_lock:
                self._conn.send((_CLOSE, -1, None))
        except (OSError, EOFError, BrokenPipeError, ValueError):
            pass
        deadline = time.monotonic() + timeout
        self._reader.join(timeout)
        if self._reap(block=True, timeout=max(0.0, deadline - time.monotonic())) is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap(block=True, timeout=5.0)
        try:
            self._conn.close()
        except OSError:
            pass

    def _reap(self, block: bool, timeout: float = 0.0) -> int | None:
        """The process's wait status once it exited (waiting up to ``timeout`` seconds if ``block``), else None."""
        deadline = time.monotonic() + timeout
        while True:
            with self._reap_lock:  # (the reader and close() may both ask)
                if self._exit_status is not None:
                    return self._exit_status
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    pid, status = self.pid, -1
                if pid == self.pid:
                    self._exit_status = status
                    return status
            if not block or time.monotonic() >= deadline:
                return None
            time.sleep(0.02)


def _describe(status: int) -> str:
    if status < 0:
        return "an unknown status"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit code {os.WEXITSTATUS(status)}"


def trainer_process_name(learner: str) -> str:
    """The training process's name in ``ps``: ``ding-trainer0`` for ``learner0``."""
    return "ding-trainer" + (learner[len("learner"):] if learner.startswith("learner") else f"-{learner}")


def _child_main(conn: Connection, make_handlers: Callable[[], Any], process_name: str,  # pragma: no cover
                learner_name: str) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the comm learner decides when this process stops
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            except (OSError, AttributeError):
                pass
        from ding.parallel.launch.cpu_placement import apply_placement
        from ding.utils.process_helper import set_process_name
        from ding.utils.torch_threads import torch_threads_in_this_thread

        set_process_name(process_name)
        apply_placement(learner_name, trains=True)  # ding -m parallel's CPU placement: this process trains
        handlers, close = make_handlers()
        send_lock = threading.Lock()

        def answer(request: int, record: Any) -> None:
            torch_threads_in_this_thread()
            handler = handlers.get(type(record))
            try:
                if handler is None:
                    raise RuntimeError(f"the training process runs no {type(record).__name__}")
                out = (_DONE, request, handler(record))
            except BaseException as e:  # noqa: BLE001 -- every failure goes back with the training process's traceback
                out = (_FAILED, request, (type(e).__name__, str(e), traceback.format_exc()))
            try:
                with send_lock:
                    conn.send(out)
            except (OSError, EOFError, BrokenPipeError):
                pass  # the parent is gone
            except Exception as e:  # noqa: BLE001 -- an answer that cannot be pickled fails its call, not silently
                with send_lock:
                    conn.send((_FAILED, request, (type(e).__name__, f"the answer could not be sent: {e}",
                                                  traceback.format_exc())))

        # each record is answered in a thread of its own (a learn task waits until its batches are trained), taken
        # from the threads that finished an earlier one: no thread start per task on the training process's core
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        idle_lock = threading.Lock()
        idle = [0]

        def worker() -> None:
            while True:
                request, record = jobs.get()
                answer(request, record)
                with idle_lock:
                    idle[0] += 1

        while True:
            try:
                kind, request, record = conn.recv()
            except (EOFError, OSError):
                break  # the parent is gone
            if kind == _CLOSE:
                break
            with idle_lock:
                start = idle[0] == 0
                if not start:
                    idle[0] -= 1
            if start:
                threading.Thread(target=worker, name="ding-trainer-task", daemon=True).start()
            jobs.put((request, record))
        close()
    except BaseException:  # noqa: BLE001 -- reported on stderr; the parent sees the exit status
        traceback.print_exc()
        code = 1
    finally:
        end_forked_child(code)
