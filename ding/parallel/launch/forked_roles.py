"""Role processes forked from ``ding -m parallel``'s launcher before it starts a thread, so they skip importing torch
and ding again; each waits on a pipe for the coordinator's address, then runs ``python -m ding <argv>``'s code."""
from __future__ import annotations

import ctypes
import importlib
import logging
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from contextlib import suppress

from ding.utils.process_helper import end_forked_child, flush_std_streams

_OPEN_PIPES: set[int] = set()  # write ends of unreleased children: a later child closes them (it must not hold them)

# What every role imports on its way to its first task that the launcher has not imported yet, imported once before
# the fork (tests/entry/test_forked_roles.py checks nothing more is imported).
ROLE_MODULES = ("flask", "werkzeug.serving", "tensorboardX", "ding.worker.builder")


def preload_role_modules() -> None:
    """Import :data:`ROLE_MODULES` before :func:`fork_role`, so the forked roles inherit them (it starts no thread)."""
    for name in ROLE_MODULES:
        importlib.import_module(name)


def can_fork() -> str | None:
    """Why this process cannot fork a role now (None: it can). Threads are counted by the OS, so native ones count
    too, except numpy's OpenBLAS workers: they stop across a fork (its ``pthread_atfork`` handler)."""
    if not hasattr(os, "fork"):
        return "os.fork is not available here"
    if threading.active_count() != 1:
        return f"{threading.active_count()} threads run in the launcher already"
    native = os_thread_count() - 1 - _blas_pool_threads()
    if native > 0:
        return f"{native} native thread(s) run in the launcher already (e.g. torch's intra-op pool after an op)"
    return None


def os_thread_count() -> int:
    """This process's threads as the OS counts them (Python's and native ones alike)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # (no /proc: Python's own count is all there is)
        return threading.active_count()


def _blas_pool_threads() -> int:
    """The worker threads of numpy's OpenBLAS (one fewer than its thread count), 0 where it cannot be asked."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return 0
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
            get = getattr(lib, symbol, None)
            if get is not None:
                return max(0, int(get()) - 1)
    return 0


class ForkedRole:
    """A forked role: :class:`subprocess.Popen`'s surface for the supervisor, and the pipe that releases it."""

    def __init__(self, pid: int, pipe_w: int | None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pipe_w = pipe_w

    def release(self, host: str, port: int) -> None:
        """Tell the waiting child where the coordinator listens; it starts its role."""
        self._close_pipe(f"{host} {int(port)}\n".encode())

    def discard(self) -> None:
        """End a child never released: it reads end-of-file and exits without starting its role."""
        self._close_pipe(b"")

    def _close_pipe(self, data: bytes) -> None:
        fd, self._pipe_w = self._pipe_w, None
        if fd is None:
            return
        _OPEN_PIPES.discard(fd)
        with suppress(OSError):  # the child is gone already: poll() tells
            if data:
                os.write(fd, data)
        os.close(fd)

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its status is lost
                self.returncode = -1
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"role pid {self.pid}", timeout or 0.0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.killpg(self.pid, sig)  # its own session and group: the role and anything it started
            except (ProcessLookupError, PermissionError):
                with suppress(ProcessLookupError):
                    os.kill(self.pid, sig)


def fork_role(argv: Sequence[str], env: Mapping[str, str], log_path: str) -> ForkedRole:
    """Fork a child that runs ``ding <argv> --coordinator-host H --coordinator-port P`` once released."""
    reason = can_fork()
    if reason is not None:
        raise RuntimeError(f"fork_role: cannot fork a role ({reason})")
    flush_std_streams()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(write_fd)
        _child(read_fd, list(argv), dict(env), log_path)
    os.close(read_fd)
    _OPEN_PIPES.add(write_fd)
    return ForkedRole(pid, write_fd)


def _child(read_fd: int, argv: list[str], env: dict[str, str], log_path: str) -> None:  # pragma: no cover (forked)
    code = 1
    try:
        for fd in list(_OPEN_PIPES):  # other children's pipes: only the launcher may hold them
            with suppress(OSError):
                os.close(fd)
        _OPEN_PIPES.clear()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setsid()  # a terminal's Ctrl-C reaches only the launcher, as for an exec'd role
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        for stream in (sys.stdout, sys.stderr):
            with suppress(AttributeError, ValueError):
                stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        with os.fdopen(read_fd, "rb") as pipe:
            address = pipe.readline().decode(errors="replace").split()
        if len(address) != 2:  # discarded, or the launcher is gone
            os._exit(0)
        os.environ.clear()
        os.environ.update(env)
        _fresh_logging()
        # what `python -m ding <argv>` runs (ding/__main__.py), in this already-initialised interpreter
        sys.argv = ["ding", *argv, "--coordinator-host", address[0], "--coordinator-port", address[1]]
        runpy.run_module("ding", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 -- the child reports and exits; it never returns into the launcher's code
        traceback.print_exc()
        code = 1
    finally:
        end_forked_child(code)


def _fresh_logging() -> None:
    """Drop the handlers the launcher had set up (its console view, its log files): the role sets up its own."""
    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for handler in list(lg.handlers):
            if not isinstance(handler, logging.NullHandler):  # (libraries' own, added at import: kept)
                lg.removeHandler(handler)
