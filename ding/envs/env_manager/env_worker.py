"""One env in one worker process: the child's command loop and the parent's handle on it.

Protocol: the parent sends ``(command, payload)``; the worker answers every command with ``(status, payload)``:
``'ok'``, ``'err'`` (the env raised; payload is the traceback text), ``'action'`` (the action did not fit the action
space; payload is the message) or ``'shape'`` (an observation of the wrong shape; payload ``(op, expected, got,
space)``). Fixed-shape Box observations travel through a shared-memory buffer instead of the pipe (the payload's obs
is then ``None``).
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import numpy as np

from ..env.ding_env_wrapper import InvalidActionError

_F32 = np.dtype(np.float32)
HAS_POLL = hasattr(select, "poll")  # select.poll: one cheap syscall per wait (multiprocessing's builds a selector)
POLL_MASK = (select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR) if HAS_POLL else 0
_PARENT_CHECK_INTERVAL = 1.0  # seconds between checks that the parent process is still alive


class _Worker:
    """The child side: owns the env (created lazily, so a restored env never builds a throwaway one)."""

    def __init__(self, conn: Connection, obs_buffer: Any, obs_shape: tuple | None, obs_dtype: str | None,
                 replay_path: str | None) -> None:
        self.conn = conn
        self.env_fn: Callable[[], Any] | None = None
        self.replay_path = replay_path
        self.env: Any = None
        self.obs_view = None
        if obs_buffer is not None:
            count = int(np.prod(obs_shape)) if obs_shape else 1
            self.obs_view = np.frombuffer(obs_buffer, dtype=np.dtype(obs_dtype), count=count).reshape(obs_shape)

    def set_env(self, env: Any) -> None:
        if self.env is not None:
            self.env.close()
        self.env = env
        space = env.observation_space
        shape = getattr(space, "shape", None)
        self.expected_shape = tuple(shape) if shape is not None and getattr(space, "is_np_flattenable", False) else None

    def ensure_env(self) -> Any:
        if self.env is None:
            assert self.env_fn is not None  # worker_main loads it before serving any command
            env = self.env_fn()
            if self.replay_path is not None:
                env.enable_save_replay(self.replay_path)
            self.set_env(env)
        return self.env

    def check_obs(self, op: str, obs: Any) -> tuple[str, Any] | None:
        """Check the obs shape and move it to shared memory; returns a ``'shape'`` reply on a mismatch."""
        expected = self.expected_shape
        if expected is not None and getattr(obs, "shape", None) != expected:
            got = getattr(obs, "shape", type(obs).__name__)
            return "shape", (op, expected, got, repr(self.env.observation_space))
        return None

    def obs_out(self, obs: Any) -> Any:
        view = self.obs_view
        if view is not None and type(obs) is np.ndarray and obs.shape == view.shape:
            view[...] = obs
            return None
        return obs

    def handle(self, cmd: str, payload: Any) -> tuple[str, Any]:
        if cmd == "step":
            ts = self.env.step(payload)
            bad = self.check_obs("step", ts.obs)
            rew = ts.reward
            if type(rew) is np.ndarray and rew.shape == (1,) and rew.dtype == _F32:
                return bad or ("ok", (self.obs_out(ts.obs), float(rew[0]), ts.done, ts.info, True))  # cheap to pickle
            return bad or ("ok", (self.obs_out(ts.obs), rew, ts.done, ts.info, False))
        if cmd == "reset":
            seed, param = payload
            env = self.ensure_env()
            if seed is not None:
                s, dynamic = seed
                env.seed(s) if dynamic is None else env.seed(s, dynamic)
            obs = env.reset(**param)
            bad = self.check_obs("reset", obs)
            return bad or ("ok", self.obs_out(obs))
        if cmd == "call":
            name, args = payload
            if name == "enable_save_replay":
                self.replay_path = args[0]
            return "ok", getattr(self.ensure_env(), name)(*args)
        if cmd == "getstate":
            return "ok", pickle.dumps(self.ensure_env(), protocol=pickle.HIGHEST_PROTOCOL)
        if cmd == "setstate":
            self.set_env(pickle.loads(payload))
            return "ok", None
        raise ValueError(f"env worker: unknown command {cmd!r}")


def worker_main(conn: Connection, env_fn_blob: bytes, obs_buffer: Any, obs_shape: tuple | None,
                obs_dtype: str | None, replay_path: str | None, watch_parent: bool) -> None:
    """Entry point of a worker process. Ends on 'close', when the parent's end of the pipe closes, or (with
    ``watch_parent``) when the parent process is gone.

    A forked worker inherits copies of the parent's ends of earlier workers' pipes, so a dead parent does not always
    close every pipe: forked workers therefore also check the parent's pid about once a second (``watch_parent``).
    Spawned workers inherit nothing and simply block on their pipe."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before anything can load libgomp
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the parent, which closes the workers
    parent = os.getppid()
    w = _Worker(conn, obs_buffer, obs_shape, obs_dtype, replay_path)
    try:
        w.env_fn = cloudpickle.loads(env_fn_blob)
        _limit_torch_threads()
        running = True
    except Exception:  # noqa: BLE001 -- any env error is reported with its traceback
        conn.send(("err", "cannot load env_fn in the worker:\n" + traceback.format_exc()))
        running = False
    while running:
        if watch_parent and not conn.poll(_PARENT_CHECK_INTERVAL):
            running = os.getppid() == parent
            continue
        try:
            cmd, payload = conn.recv()
        except (EOFError, OSError):
            break
        if cmd == "close":
            _close_quietly(w.env)
            w.env = None
            conn.send(("ok", None))
            break
        try:
            reply = w.handle(cmd, payload)
            _limit_torch_threads()
        except Exception as e:  # noqa: BLE001 -- any env error is reported with its traceback
            status = "action" if isinstance(e, InvalidActionError) else "err"
            reply = (status, str(e) if status == "action" else traceback.format_exc())
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError):
            conn.send(("err", f"cannot send the result of {cmd!r} to the parent:\n{traceback.format_exc()}"))
        except (BrokenPipeError, EOFError, OSError):
            break
    _close_quietly(w.env)
    conn.close()


def _limit_torch_threads() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _close_quietly(env: Any) -> None:
    if env is None:
        return
    try:
        env.close()
    except Exception:  # noqa: BLE001 -- the worker is exiting; a failing env.close must not hide why
        traceback.print_exc()


class EnvWorkerHandle:
    """The parent's side of one worker process: start, send, receive, stop."""

    def __init__(self, ctx: Any, env_id: int, env_fn: Callable[[], Any], obs_shape: tuple | None,
                 obs_dtype: np.dtype | None, replay_path: str | None = None) -> None:
        self.env_id = env_id
        self._stopped = False
        self.obs_shape = obs_shape
        self.obs_view = None
        buf = None
        if obs_shape is not None and obs_dtype is not None:
            nbytes = max(1, int(np.prod(obs_shape)) * np.dtype(obs_dtype).itemsize)
            buf = ctx.RawArray("b", nbytes)
            count = int(np.prod(obs_shape)) if obs_shape else 1
            self.obs_view = np.frombuffer(buf, dtype=obs_dtype, count=count).reshape(obs_shape)
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=worker_main,
            args=(child, cloudpickle.dumps(env_fn), buf, obs_shape,
                  None if obs_dtype is None else np.dtype(obs_dtype).str, replay_path,
                  ctx.get_start_method() == "fork"),
            name=f"ding-env-worker-{env_id}",
            daemon=True,
        )
        try:
            self.process.start()
        finally:
            child.close()  # keep only the child's copy, so the pipe reports EOF when the worker dies
        self.fd = self.conn.fileno()
        self._poller = None
        if HAS_POLL:
            self._poller = select.poll()
            self._poller.register(self.fd, POLL_MASK)

    def readable(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (None: no limit) for an answer, or for EOF if the worker died."""
        if self._poller is None:
            return self.conn.poll(timeout)
        return bool(self._poller.poll(None if timeout is None else timeout * 1000.0))

    @property
    def alive(self) -> bool:
        return not self._stopped and self.process.is_alive()

    def send(self, cmd: str, payload: Any = None) -> None:
        self.conn.send((cmd, payload))

    def recv(self) -> tuple[str, Any]:
        """The next reply; a dead worker gives ``('lost', message)``."""
        try:
            return self.conn.recv()
        except (EOFError, OSError, ConnectionResetError):
            return "lost", self.death_message()

    def take_obs(self, obs: Any) -> Any:
        """The observation of a reply: a copy of the shared buffer when the worker put it there."""
        return self.obs_view.copy() if obs is None and self.obs_view is not None else obs

    def death_message(self) -> str:
        if self._stopped:
            return f"worker process of env {self.env_id} was stopped"
        self.process.join(timeout=0.5)
        code = self.process.exitcode
        how = "is still running" if code is None else f"died (exit code {code})"
        return f"worker process {self.process.pid} of env {self.env_id} {how}"

    def stop(self, graceful_timeout: float = 0.0) -> None:
        """End the worker: ask it to close if ``graceful_timeout`` > 0, else (or after that) terminate, then kill."""
        if self._stopped:
            return
        self._stopped = True
        p = self.process
        if graceful_timeout > 0 and p.is_alive():
            try:
                self.conn.send(("close", None))
                deadline = time.monotonic() + graceful_timeout
                while p.is_alive() and time.monotonic() < deadline:
                    if self.conn.poll(min(0.05, max(0.0, deadline - time.monotonic()))):
                        self.conn.recv()  # drain the reply (or a stale one) so the worker can exit
            except (BrokenPipeError, EOFError, OSError):
                pass
            p.join(timeout=max(0.0, graceful_timeout))
        if p.is_alive():
            p.terminate()
            p.join(timeout=1.0)
        if p.is_alive():
            p.kill()
            p.join(timeout=1.0)
        self.conn.close()
        if p.exitcode is not None:
            p.close()
