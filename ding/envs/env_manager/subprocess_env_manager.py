"""Env managers that run each env in its own worker process: ``subprocess`` (synchronous) and ``async_subprocess``."""
from __future__ import annotations

import copy
import math
import multiprocessing as mp
import select
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import wait as mp_wait
from typing import Any

import numpy as np

from ding.config.ranges import at_least
from ding.utils import ENV_MANAGER_REGISTRY, ConfigError, EnvError

from ..env.base_env import BaseEnv, BaseEnvTimestep
from ..env.ding_env_wrapper import InvalidActionError
from .base_env_manager import BaseEnvManager
from .env_worker import HAS_POLL, POLL_MASK, EnvWorkerHandle
from .manager_utils import EnvState, abnormal_timestep, obs_shape_of, shape_error

_CLOSE_GRACE = 5.0  # seconds idle workers get to close their env before they are terminated
# (env_id, kind, sent payload, status, reply): one answer of a worker, or a failure noticed by the parent
Reply = tuple[int, str, Any, str, Any]


class _SubprocessEnvManager(BaseEnvManager):
    """Machinery shared by the two subprocess managers: workers, in-flight commands, timeouts, recovery."""

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: Mapping | None = None) -> None:
        super().__init__(env_fn, cfg)
        connect = self._cfg.get("connect_timeout")
        if connect is not None and self._reset_timeout is not None:
            self._reset_timeout = max(float(self._reset_timeout), float(connect))
        c = self._cfg
        if c.context not in mp.get_all_start_methods():
            raise ConfigError(
                f"env.manager.context: {c.context!r} is not a start method of this platform; "
                f"use one of {mp.get_all_start_methods()}"
            )
        self._ctx = mp.get_context(c.context)
        self._shared_memory = bool(c.shared_memory)
        self._workers: list[EnvWorkerHandle] = []
        self._pending: dict[int, tuple[str, float, Any]] = {}  # env_id -> (kind, deadline, payload) in flight
        self._arrived: dict[int, tuple[str, Any, str, Any]] = {}  # received answers not processed yet
        self._last_obs: dict[int, Any] = {}  # obs an in-flight step acted on (for an abnormal timestep)
        self._shm_spec: tuple[tuple | None, Any] = (None, None)
        self._action_spaces: list[Any] | None = None  # per-env copies in the parent, for random_action

    # ---- workers ------------------------------------------------------------------------------------------------
    def _create_envs(self, envs: list[BaseEnv] | None = None) -> None:
        assert envs is None, "subprocess managers restore envs inside their workers"
        obs_space = self._get_spaces()[0]
        shape = obs_shape_of(obs_space)
        dtype = getattr(obs_space, "dtype", None)
        if self._shared_memory and shape is not None and dtype is not None and np.dtype(dtype).kind in "biuf":
            self._shm_spec = (shape, np.dtype(dtype))
        else:
            self._shm_spec = (None, None)
        self._workers = []
        try:
            for i in range(self._env_num):
                self._workers.append(self._start_worker(i))
        except BaseException:
            for w in self._workers:
                w.stop()
            self._workers = []
            raise
        self._pending, self._arrived, self._last_obs = {}, {}, {}
        self._env_states = [EnvState.INIT] * self._env_num

    def _start_worker(self, env_id: int) -> EnvWorkerHandle:
        replay = self._replay_path[env_id] if self._replay_path is not None else None
        return EnvWorkerHandle(self._ctx, env_id, self._env_fn[env_id], *self._shm_spec, replay_path=replay)

    def _renew(self, env_id: int) -> None:
        """Replace the worker (and so the env) of ``env_id`` by a fresh process."""
        self._pending.pop(env_id, None)
        self._workers[env_id].stop()
        self._arrived.pop(env_id, None)
        self._workers[env_id] = self._start_worker(env_id)

    def _send(self, env_id: int, kind: str, payload: Any) -> None:
        limit = self._step_timeout if kind == "step" else self._reset_timeout
        w = self._workers[env_id]
        try:
            w.send(kind, payload)
        except (BrokenPipeError, EOFError, OSError):
            self._arrived[env_id] = (kind, payload, "lost", w.death_message())
            return
        self._pending[env_id] = (kind, time.monotonic() + limit if limit else math.inf, payload)

    def _wait_any(self, pending: Mapping[int, Any], timeout: float | None) -> list[int]:
        """Env ids among ``pending`` whose worker answered (or died) within ``timeout`` seconds."""
        if HAS_POLL:  # a fresh select.poll costs a few microseconds; multiprocessing's wait builds a selector
            poller, owner = select.poll(), {}
            for i in pending:
                fd = self._workers[i].fd
                poller.register(fd, POLL_MASK)
                owner[fd] = i
            return [owner[fd] for fd, _ in poller.poll(None if timeout is None else timeout * 1000.0)]
        owner = {}
        for i in pending:
            w = self._workers[i]
            owner[w.conn] = owner[w.process.sentinel] = i
        return list(dict.fromkeys(owner[o] for o in mp_wait(list(owner), timeout)))

    def _send_reset(self, env_id: int) -> None:
        self._env_states[env_id] = EnvState.RESET
        self._send(env_id, "reset", (self._seed_args(env_id), self._reset_param[env_id]))

    def _collect(self, timeout: float | None, only: set[int] | None = None, parked: bool = True) -> list[Reply]:
        """Answers of in-flight commands (of ``only`` envs if given) within ``timeout`` seconds; a dead worker, or one
        past its command's deadline (which is then stopped), gives a ``'lost'`` / ``'timeout'`` answer. Answers parked
        in ``_arrived`` come first (unless ``parked`` is False)."""
        ids = [i for i in self._arrived if only is None or i in only] if parked else []
        if ids:
            return [(i, *self._arrived.pop(i)) for i in ids]
        pending = {i: p for i, p in self._pending.items() if only is None or i in only}
        if not pending:
            return []
        now = time.monotonic()
        wait_for = max(0.0, min(p[1] for p in pending.values()) - now)
        if timeout is not None:
            wait_for = min(wait_for, timeout)
        out: list[Reply] = []
        for i in self._wait_any(pending, None if wait_for == math.inf else wait_for):
            kind, _, payload = self._pending.pop(i)
            w = self._workers[i]
            status, reply = w.recv() if w.readable(0.0) else ("lost", w.death_message())
            if status == "ok":
                reply = (w.take_obs(reply[0]), *reply[1:]) if kind == "step" else w.take_obs(reply)
            out.append((i, kind, payload, status, reply))
        now = time.monotonic()
        for i, (kind, deadline, payload) in pending.items():
            if deadline <= now and i in self._pending:
                self._pending.pop(i)
                limit = self._step_timeout if kind == "step" else self._reset_timeout
                pid = self._workers[i].process.pid
                self._workers[i].stop()
                message = (f"env {i}: {kind} did not finish within {limit}s (env.manager.{kind}_timeout); its worker "
                           f"process {pid} was stopped")
                out.append((i, kind, payload, "timeout", message))
        return out

    def _handle(self, reply: Reply, results: dict[int, BaseEnvTimestep] | None) -> None:
        """Apply one answer: update ready obs / counters, auto-reset, or recover a failed env.

        ``results`` receives step timesteps; None discards step answers (their env is about to be reset)."""
        env_id, kind, _, status, value = reply
        if status == "ok":
            if kind == "reset":
                self._ready_obs[env_id] = value
                self._env_states[env_id] = EnvState.RUN
            elif results is not None:
                obs, reward, done, info, packed = value
                if packed:  # the worker sent a float32 (1,) reward as a float: cheaper to pickle
                    reward = np.array([reward], dtype=np.float32)
                results[env_id] = BaseEnvTimestep(obs, reward, done, info)
                self._last_obs.pop(env_id, None)
                if done:
                    self._episode_end(env_id)
                else:
                    self._ready_obs[env_id] = obs
            return
        if status == "shape":
            op, expected, got, space = value
            self.close()
            raise shape_error(env_id, op, space, expected, got)
        if status == "action":
            self._ready_obs[env_id] = self._last_obs.pop(env_id)
            self._env_states[env_id] = EnvState.RUN
            raise InvalidActionError(f"env {env_id}: {value}")
        # 'err' (the env raised), 'lost' (the worker died) or 'timeout' (it was stopped)
        self._on_failure(env_id, kind, value, lost=status != "err")
        last_obs = self._last_obs.pop(env_id, None)
        if kind == "step" and results is not None:
            results[env_id] = abnormal_timestep(last_obs, value)
        self._send_reset(env_id)

    def _episode_end(self, env_id: int) -> None:
        self._episode_count[env_id] += 1
        self._fail_count[env_id] = 0
        if self._episode_count[env_id] >= self._episode_num:
            self._env_states[env_id] = EnvState.DONE
        elif self._auto_reset:
            self._send_reset(env_id)
        else:
            self._env_states[env_id] = EnvState.NEED_RESET

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn``; on anything but a reported env error (already handled) stop every worker and re-raise."""
        try:
            return fn()
        except EnvError:
            raise
        except BaseException:  # KeyboardInterrupt or a bug: leave no worker behind
            self.close()
            raise

    # ---- lifecycle ----------------------------------------------------------------------------------------------
    def _reset_envs(self, env_ids: list[int]) -> None:
        self._guarded(lambda: self._reset_parallel(env_ids))

    def _reset_parallel(self, env_ids: list[int]) -> None:
        targets = set(env_ids)
        while targets & (self._pending.keys() | self._arrived.keys()):  # finish what they are doing; drop results
            for r in self._collect(None, only=targets):
                self._handle(r, None)
        for i in env_ids:
            self._last_obs.pop(i, None)
            self._send_reset(i)
        while targets & (self._pending.keys() | self._arrived.keys()):
            for r in self._collect(None, only=targets):
                self._handle(r, None)

    def close(self) -> None:
        """Stop every worker (idle ones close their env first). Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        workers, self._workers = self._workers, []
        busy = set(self._pending)
        self._pending, self._arrived, self._last_obs, self._ready_obs = {}, {}, {}, {}
        self._env_states = [s if s in (EnvState.DONE, EnvState.ERROR) else EnvState.VOID for s in self._env_states]
        polite = []
        for i, w in enumerate(workers):
            if i in busy or not w.alive:
                w.stop()
                continue
            try:
                w.send("close")
                polite.append(w)
            except (BrokenPipeError, EOFError, OSError):
                w.stop()
        deadline = time.monotonic() + _CLOSE_GRACE
        for w in polite:
            w.process.join(timeout=max(0.0, deadline - time.monotonic()))
            w.stop()

    # ---- stepping -----------------------------------------------------------------------------------------------
    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        self._check_open()
        ready = self._ready_obs
        if not isinstance(actions, Mapping) or not ready.keys() >= actions.keys():
            self._raise_not_ready(actions)
        return self._guarded(lambda: self._step(actions))

    def _step(self, actions: Mapping[int, Any]) -> dict[int, BaseEnvTimestep]:
        ready = self._ready_obs
        for env_id, action in actions.items():
            self._last_obs[env_id] = ready.pop(env_id)
            self._send(env_id, "step", action)
        results: dict[int, BaseEnvTimestep] = {}
        self._pump(results)
        return results

    def _pump(self, results: dict[int, BaseEnvTimestep]) -> None:
        raise NotImplementedError

    # ---- random actions, replays --------------------------------------------------------------------------------
    def _seed_action_spaces(self, seeds: list[int]) -> None:
        """Random actions are drawn in the parent (no round trip), from one copy of env 0's action space per env,
        seeded like the env seeds its own (``seed + i``): the same actions ``BaseEnvManager.random_action`` gives
        for envs such as ``DingEnvWrapper`` that seed their action space with their seed."""
        self._action_spaces = [copy.deepcopy(self.action_space) for _ in seeds]
        for space, s in zip(self._action_spaces, seeds):
            space.seed(s)

    def random_action(self) -> dict[int, Any]:
        self._check_open()
        if self._action_spaces is None:
            self._action_spaces = [copy.deepcopy(self.action_space) for _ in range(self._env_num)]
        return {i: self._action_spaces[i].sample() for i in sorted(self._ready_obs)}

    def _apply_replay_paths(self) -> None:
        assert self._replay_path is not None  # called by enable_save_replay once it has set the paths
        self._park_in_flight()
        self._call({i: ("call", ("enable_save_replay", (self._replay_path[i],))) for i in self._live_workers()})

    def _park_in_flight(self) -> None:
        """Wait for every in-flight command and keep its answer, unprocessed, for the next ``step``."""

        def park() -> None:
            while self._pending:
                for r in self._collect(None, parked=False):
                    self._arrived[r[0]] = r[1:]

        self._guarded(park)

    def _live_workers(self) -> list[int]:
        """Env ids whose worker is alive (a parked 'lost' / 'timeout' answer means it is gone)."""
        return [i for i in range(self._env_num) if self._arrived.get(i, ("", None, "ok"))[2] not in ("lost", "timeout")]

    def _call(self, commands: Mapping[int, tuple[str, Any]]) -> dict[int, Any]:
        """Run one command per env on idle workers and wait for every answer (``reset_timeout`` bounds each); an env
        that raised makes an ``EnvError`` with its traceback (after every answer was read)."""
        answers = self._guarded(lambda: self._call_inner(commands))
        errors = [f"env {i}: {commands[i][0]} failed in its worker:\n{value}"
                  for i, (status, value) in answers.items() if status != "ok"]
        if errors:
            raise EnvError("\n".join(errors))
        return {i: v for i, (_, v) in answers.items()}

    def _call_inner(self, commands: Mapping[int, tuple[str, Any]]) -> dict[int, tuple[str, Any]]:
        assert not (commands.keys() & self._pending.keys()), "workers must be idle"
        sent = []
        for i, (cmd, payload) in commands.items():
            try:
                self._workers[i].send(cmd, payload)
            except (BrokenPipeError, EOFError, OSError):
                self.close()
                raise EnvError(f"env {i}: cannot send {cmd!r}: {self._workers[i].death_message()}") from None
            sent.append((i, cmd))
        limit = self._reset_timeout or math.inf
        deadline = time.monotonic() + limit
        out = {}
        for i, cmd in sent:  # read every answer before raising, so no stale answer stays in a pipe
            w = self._workers[i]
            left = deadline - time.monotonic()
            if not w.readable(None if left == math.inf else max(0.0, left)):
                self.close()
                raise EnvError(f"env {i}: {cmd} did not answer within {limit}s (env.manager.reset_timeout)")
            status, value = w.recv()
            if status == "lost":
                self.close()
                raise EnvError(f"env {i}: {cmd} failed: {value}")
            out[i] = (status, value)
        return out

    # ---- exact resume -------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Like ``BaseEnvManager.state_dict``; answers of commands still in flight are kept for the next ``step``."""
        self._check_open()
        self._park_in_flight()
        answers = self._guarded(lambda: self._call_inner({i: ("getstate", None) for i in self._live_workers()}))
        for i, (status, value) in answers.items():
            if status != "ok":
                raise EnvError(
                    f"env {i}: cannot pickle the env in its worker, so state_dict() cannot save it and a resumed run "
                    f"cannot restore it mid-episode. Make the env picklable (e.g. define __getstate__/__setstate__). "
                    f"The worker's error:\n{value}"
                )
        state = self._common_state()
        state["envs"] = [answers[i][1] if i in answers else None for i in range(self._env_num)]
        state["arrived"] = copy.deepcopy(self._arrived)
        state["last_obs"] = copy.deepcopy(self._last_obs)
        state["action_spaces"] = copy.deepcopy(self._action_spaces)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()``; a missing env (its worker was lost) is rebuilt and then recovered."""
        self._check_state(state)
        if self._closed:
            self._create_envs()
            self._closed = False
        else:
            self._guarded(self._drain_all)
        self._call({i: ("setstate", blob) for i, blob in enumerate(state["envs"]) if blob is not None})
        self._load_common_state(state)
        self._arrived = copy.deepcopy(dict(state.get("arrived") or {}))
        self._last_obs = copy.deepcopy(dict(state.get("last_obs") or {}))
        if state.get("action_spaces") is not None:
            self._action_spaces = copy.deepcopy(state["action_spaces"])

    def _drain_all(self) -> None:
        while self._pending or self._arrived:
            for r in self._collect(None):
                self._handle(r, None)


@ENV_MANAGER_REGISTRY.register("subprocess")
class SyncSubprocessEnvManager(_SubprocessEnvManager):
    """One worker process per env; ``step`` waits for every env it was given (and for their auto-resets)."""

    config = dict(
        episode_num=float("inf"),  # episodes each env runs before it is done (inf: until the caller stops)
        max_retry=1,  # attempts per env before an error is raised; failures count since its last normal episode end
        retry_type="reset",  # recovery between attempts: 'reset' the env or 'renew' it (a dead/hung worker: renew)
        auto_reset=True,  # reset an env as soon as its episode ends (False: wait for reset({env_id: param}))
        step_timeout=60.0,  # seconds a step may take before its worker is stopped (None: no limit)
        reset_timeout=120.0,  # seconds a reset (including building the env in a new worker) may take (None: no limit)
        retry_waiting_time=0.1,  # seconds to wait before recovering a failed env
        shared_memory=True,  # fixed-shape Box observations travel through shared memory instead of the pipe
        context="spawn",  # process start method: 'spawn' (safe with threads), 'fork' or 'forkserver'
        # DI-engine's key: seconds a worker may take to answer a reset; when set, the reset limit is at least this
        connect_timeout=None,
    )

    def _step(self, actions: Mapping[int, Any]) -> dict[int, BaseEnvTimestep]:
        return dict(sorted(super()._step(actions).items()))  # env id order, whatever the order of the answers

    def _pump(self, results: dict[int, BaseEnvTimestep]) -> None:
        while self._pending or self._arrived:
            for r in self._collect_in_order():
                self._handle(r, results)

    def _collect_in_order(self) -> list[Reply]:
        """Like ``_collect`` for a step that waits for everyone: read the workers one by one (one ``poll`` each, no
        selector set-up), which is cheaper than waiting for whichever answers first."""
        if self._arrived:
            return self._collect(None)
        out: list[Reply] = []
        for i in list(self._pending):
            kind, deadline, payload = self._pending[i]
            w = self._workers[i]
            left = deadline - time.monotonic()
            if not w.readable(None if left == math.inf else max(0.0, left)):
                return out + self._collect(0.0, only={i})  # past its deadline: reported as a timeout
            self._pending.pop(i)
            status, reply = w.recv()  # a dead worker's pipe reads as EOF: ('lost', ...)
            if status == "ok":
                reply = (w.take_obs(reply[0]), *reply[1:]) if kind == "step" else w.take_obs(reply)
            out.append((i, kind, payload, status, reply))
        return out


@ENV_MANAGER_REGISTRY.register("async_subprocess")
class AsyncSubprocessEnvManager(_SubprocessEnvManager):
    """One worker process per env; ``step`` returns as soon as ``wait_num`` envs answered (or ``step_wait_timeout``
    passed with at least one answer). The others keep running; their results come with a later ``step``, which may
    be ``step({})`` just to collect them. ``ready_obs`` holds only the envs that are waiting for an action."""

    config = dict(
        SyncSubprocessEnvManager.config,  # every key of the synchronous manager, plus:
        wait_num=2,  # step() returns once this many stepping envs answered (fewer if fewer are stepping)
        step_wait_timeout=0.01,  # ...or once this many seconds passed and at least one env answered
    )
    config_ranges = {"wait_num": at_least(1, integer=True), "step_wait_timeout": at_least(0)}

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: Mapping | None = None) -> None:
        super().__init__(env_fn, cfg)
        self._wait_num = int(self._cfg.wait_num)
        self._step_wait_timeout = self._cfg.step_wait_timeout

    @property
    def ready_obs(self) -> dict[int, Any]:
        """Envs waiting for an action. If none is but some are resetting, waits for the first of those."""
        self._check_open()
        if not self._ready_obs:
            resetting = {i for i, p in self._pending.items() if p[0] == "reset"}
            resetting |= {i for i, a in self._arrived.items() if a[0] == "reset"}
            if resetting:
                self._guarded(lambda: self._wait_ready(resetting))
        return dict(sorted(self._ready_obs.items()))

    @property
    def ready_obs_id(self) -> list[int]:
        return list(self.ready_obs)

    def _wait_ready(self, resetting: set[int]) -> None:
        while not self._ready_obs and resetting & (self._pending.keys() | self._arrived.keys()):
            for r in self._collect(None, only=resetting):
                self._handle(r, None)

    def _pump(self, results: dict[int, BaseEnvTimestep]) -> None:
        stepping = sum(1 for p in self._pending.values() if p[0] == "step")
        stepping += sum(1 for a in self._arrived.values() if a[0] == "step")
        need = min(self._wait_num, stepping)
        wait_until = None if self._step_wait_timeout is None else time.monotonic() + self._step_wait_timeout
        while self._pending or self._arrived:
            enough = len(results) >= need or (
                results and wait_until is not None and time.monotonic() >= wait_until
            )
            if enough and self._ready_obs:
                return
            if enough or not results or wait_until is None:
                timeout = None  # keep waiting: for a first answer, or for some env to become ready
            else:
                timeout = max(0.0, wait_until - time.monotonic())
            for r in self._collect(timeout):
                self._handle(r, results)
