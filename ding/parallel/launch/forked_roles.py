"""Role processes forked from ``ding -m parallel``'s launcher, so they start without importing torch and ding again.

Forking is how a local role starts (figures in docs/benchmarks.md). A role is
exec'd (``python -m ding -m dist --module ...``) only where a fork cannot be used: a config with ``policy.cuda``
(CUDA does not survive a fork), an OS without ``fork``, and a launcher where another thread runs already (a fork
would copy its locks half-held) -- which is always so for a restart, since the coordinator's threads run by then.

:func:`fork_role` forks the launcher before it starts any thread. The child waits on a pipe for the coordinator's
address (:meth:`ForkedRole.release` sends it once the coordinator listens), then runs exactly what ``python -m ding``
runs with the role's argv, in its own session, with its output in its log file and an exec'd role's environment. A
child whose launcher dies before releasing it reads end-of-file and exits; :meth:`ForkedRole.discard` ends one that
is no longer needed. :class:`ForkedRole` answers ``poll``/``wait``/``send_signal``/``returncode`` like
:class:`subprocess.Popen`, so the supervisor watches forked and exec'd roles alike.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence

from ding.utils.process_helper import end_forked_child, flush_std_streams

_OPEN_PIPES: set[int] = set()  # write ends of unreleased children: a later child closes them (it must not hold them)

# What every role imports on its way to its first task that the launcher has not imported yet when it forks (each
# lazily where it is used: a serial run never loads Flask); imported once before the fork, so the roles of a local run
# do not each import them again at the same time (tests/entry/test_forked_roles.py checks nothing more is imported).
ROLE_MODULES = ("flask", "werkzeug.serving", "tensorboardX", "ding.worker.builder")


def preload_role_modules() -> None:
    """Import :data:`ROLE_MODULES` in this process (the launcher, before :func:`fork_role`): the forked roles
    inherit them. Importing starts no thread, so the launcher can still fork afterwards."""
    import importlib

    for name in ROLE_MODULES:
        importlib.import_module(name)


def can_fork() -> str | None:
    """Why this process cannot fork a role now (None: it can): not on Linux/macOS, or other threads run already.
    Threads are counted by the OS (``/proc/self/task``), so native ones count too (torch's intra-op pool once an op
    ran, a library's own threads), except the worker threads of numpy's OpenBLAS: they stop across a fork
    (OpenBLAS's ``pthread_atfork`` handler) and are started again on the next call."""
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
    """The worker threads of the OpenBLAS numpy loaded (its pool: one thread fewer than its thread count), 0 where
    there is none or it cannot be asked."""
    import ctypes

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
    """A forked role process, as far as the launcher needs it: the Popen surface, and the pipe that releases it."""

    def __init__(self, pid: int, pipe_w: int | None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pipe_w = pipe_w

    def release(self, host: str, port: int) -> None:
        """Tell the waiting child where the coordinator listens; it starts its role."""
        self._write(f"{host} {int(port)}\n".encode())

    def discard(self) -> None:
        """End a child that was never released (it reads end-of-file and exits without starting its role)."""
        self._write(b"")

    def _write(self, data: bytes) -> None:
        fd, self._pipe_w = self._pipe_w, None
        if fd is None:
            return
        _OPEN_PIPES.discard(fd)
        try:
            if data:
                os.write(fd, data)
        except OSError:  # the child is gone already: poll() tells
            pass
        finally:
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
                try:
                    os.kill(self.pid, sig)
                except ProcessLookupError:
                    pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_role(argv: Sequence[str], env: Mapping[str, str], log_path: str) -> ForkedRole:
    """Fork a child that waits for the coordinator's address, then runs ``ding <argv> --coordinator-host H
    --coordinator-port P`` with ``env`` as its environment and ``log_path`` as its stdout/stderr. Call only where
    :func:`can_fork` says yes."""
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
            try:
                os.close(fd)
            except OSError:
                pass
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
            try:
                stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
            except (AttributeError, ValueError):
                pass
        address = _read_address(read_fd)
        if address is None:  # discarded, or the launcher is gone
            os._exit(0)
        os.environ.clear()
        os.environ.update(env)
        _fresh_logging()
        import runpy

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


def _read_address(fd: int) -> tuple[str, str] | None:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 256)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    parts = data.decode(errors="replace").split()
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _fresh_logging() -> None:
    """Drop the handlers the launcher had set up (its console view, its log files): the role sets up its own."""
    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for handler in list(lg.handlers):
            if not isinstance(handler, logging.NullHandler):  # (libraries' own, added at import: kept)
                lg.removeHandler(handler)
