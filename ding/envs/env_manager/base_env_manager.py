"""The in-process env manager, and the bookkeeping every env manager shares."""
from __future__ import annotations

import copy
import logging
import os
import pickle
import time
import traceback
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from ding.config.ranges import at_least, greater_than, one_of
from ding.utils import ENV_MANAGER_REGISTRY, EnvError, apply_default_torch_threads, close_all

from ..env.base_env import BaseEnv, BaseEnvTimestep
from ..env.ding_env_wrapper import InvalidActionError
from .call_timeout import CallTimeout, TimedCalls
from .manager_utils import (
    _OTHER_MANAGER_KEYS,
    EnvState,
    ManagerSurface,
    abnormal_timestep,
    apply_seed,
    check_manager_cfg,
    obs_shape_of,
    pickle_env,
    shape_error,
)

logger = logging.getLogger(__name__)

@ENV_MANAGER_REGISTRY.register("base")
class BaseEnvManager(ManagerSurface):
    """Steps a list of envs one after another in this process.

    ``BaseEnvManager(env_fn, cfg)`` with ``env_fn`` a list of callables that each build one env. ``step`` takes
    ``{env_id: action}`` for ready envs and returns ``{env_id: BaseEnvTimestep}``; an env whose episode ends is reset
    at once (``auto_reset``) and its new observation shows up in ``ready_obs``. With ``step_timeout`` /
    ``reset_timeout`` set, those calls run in a helper thread per env (see ``call_timeout.py``) and one that overruns
    its limit counts as a failure of that env, like an exception.
    """

    config = dict(
        episode_num=float("inf"),  # episodes each env runs before it is done (inf: until the caller stops)
        max_retry=1,  # attempts per env before an error is raised; failures count since its last normal episode end
        retry_type="reset",  # recovery between attempts: 'reset' the env, or 'renew' (rebuild it from env_fn)
        auto_reset=True,  # reset an env as soon as its episode ends (False: wait for reset({env_id: param}))
        # Seconds a step / reset (with its seeding) may take; None: no limit. Here the call then runs in a helper
        # thread the manager stops waiting for: a call past its limit is a failure (the env is abandoned, and
        # rebuilt from env_fn if max_retry allows).
        step_timeout=None,
        reset_timeout=None,
        retry_waiting_time=0.1,  # seconds to wait before recovering a failed env
    )
    # Keys of the other built-in managers, accepted (and ignored) so one env.manager dict works for every type.
    open_config_keys = tuple(sorted(_OTHER_MANAGER_KEYS))
    config_ranges = {
        "episode_num": greater_than(0),
        "max_retry": at_least(1, integer=True),
        "retry_type": one_of("reset", "renew"),
        "step_timeout": greater_than(0),
        "reset_timeout": greater_than(0),
        "retry_waiting_time": at_least(0),
    }

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: Mapping | None = None) -> None:
        if not isinstance(env_fn, (list, tuple)) or not env_fn or not all(callable(f) for f in env_fn):
            raise EnvError(
                f"{type(self).__name__}: env_fn must be a non-empty list of callables that each build one env, "
                f"got {env_fn!r}"
            )
        apply_default_torch_threads()  # a loop built by hand gets the pipelines' thread default
        self._env_fn = list(env_fn)
        self._env_num = len(self._env_fn)
        self._cfg = check_manager_cfg(self, cfg)
        c = self._cfg
        self._episode_num = c.episode_num
        self._max_retry = int(c.max_retry)
        self._retry_type = c.retry_type
        self._auto_reset = bool(c.auto_reset)
        self._step_timeout = c.step_timeout
        self._reset_timeout = c.reset_timeout
        self._retry_waiting_time = float(c.retry_waiting_time)
        self._closed = True
        self._spaces: tuple[Any, Any, Any] | None = None
        self._reference_env: BaseEnv | None = None  # DI-engine's ``_env_ref``, built on first use
        # (seed, dynamic_seed) applied once at the env's next reset; the last applied one re-seeds a rebuilt env
        self._env_seed: list[tuple[int, bool | None] | None] = [None] * self._env_num
        self._applied_seed: list[tuple[int, bool | None] | None] = [None] * self._env_num
        self._replay_path: list[str] | None = None
        self._reset_param: dict[int, dict] = {i: {} for i in range(self._env_num)}
        self._timed: TimedCalls | None = None  # helper threads of the limited calls (created on first use)
        self._abandoned: set[int] = set()  # envs whose call overran its limit: closed by their helper thread
        self._init_state()

    def _init_state(self) -> None:
        n = self._env_num
        self._env_states = [EnvState.VOID] * n
        self._episode_count = [0] * n
        self._fail_count = [0] * n
        self._ready_obs: dict[int, Any] = {}

    # ---- properties (the rest: ManagerSurface) ------------------------------------------------------------
    def _get_spaces(self) -> tuple[Any, Any, Any]:
        if self._spaces is None:
            env = self._env_fn[0]()
            try:
                self._spaces = (env.observation_space, env.action_space, env.reward_space)
            finally:
                env.close()
        return self._spaces

    @property
    def _env_ref(self) -> BaseEnv:
        """DI-engine's reference env, which users' scripts read attributes from: a launched manager's first env,
        else one env built from the first factory on first use and kept until :meth:`close`."""
        envs = getattr(self, "_envs", None)
        if envs:
            return envs[0]
        if self._reference_env is None:
            self._reference_env = self._env_fn[0]()
        return self._reference_env

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running"
        return f"{type(self).__name__}(env_num={self._env_num}, {state})"

    # ---- lifecycle ----------------------------------------------------------------------------------------------
    def launch(self, reset_param: dict[int, dict] | None = None) -> None:
        """Create every env and reset it (``reset_param[env_id]`` are keyword arguments of that env's reset)."""
        if not self._closed:
            raise EnvError(f"{type(self).__name__}: already launched; close() it before launching again")
        self._check_reset_param(reset_param)
        for i, p in (reset_param or {}).items():
            self._reset_param[i] = dict(p or {})
        self._create_envs()
        self._closed = False
        try:
            self.reset()
        except BaseException:
            self.close()
            raise

    def _create_envs(self, envs: list[BaseEnv] | None = None) -> None:
        self._envs: list[BaseEnv] = envs if envs is not None else [f() for f in self._env_fn]
        self._abandoned = set()
        self._obs_shape = [obs_shape_of(e.observation_space) for e in self._envs]
        self._spaces = (self._envs[0].observation_space, self._envs[0].action_space, self._envs[0].reward_space)
        if self._replay_path is not None and envs is None:
            for e, p in zip(self._envs, self._replay_path):
                e.enable_save_replay(p)
        self._env_states = [EnvState.INIT] * self._env_num

    def reset(self, reset_param: dict[int, dict] | None = None) -> None:
        """Reset every env (None: a fresh start, episode counts set to 0) or only those in ``reset_param``."""
        self._check_open()
        self._check_reset_param(reset_param)
        if reset_param is None:
            env_ids = list(range(self._env_num))
            self._episode_count = [0] * self._env_num
            self._fail_count = [0] * self._env_num
        else:
            env_ids = list(reset_param)
            for i, p in reset_param.items():
                self._reset_param[i] = dict(p or {})
        for i in env_ids:
            self._ready_obs.pop(i, None)
            self._env_states[i] = EnvState.RESET
        self._reset_envs(env_ids)

    def _check_reset_param(self, reset_param: Mapping | None) -> None:
        if reset_param is None:
            return
        if not isinstance(reset_param, Mapping):
            raise EnvError(f"reset_param must be a dict {{env_id: {{reset kwargs}}}}, got {type(reset_param).__name__}")
        bad = [k for k in reset_param if not (isinstance(k, int) and 0 <= k < self._env_num)]
        if bad:
            raise EnvError(f"reset_param: unknown env ids {bad}; valid ids are 0..{self._env_num - 1}")

    def _reset_envs(self, env_ids: list[int]) -> None:
        for i in env_ids:
            self._reset_one(i)

    def _seed_args(self, env_id: int) -> tuple[int, bool | None] | None:
        """The seed to apply before this env's next reset (used once), remembered for rebuilt envs."""
        seed = self._env_seed[env_id]
        if seed is not None:
            self._env_seed[env_id] = None
            self._applied_seed[env_id] = seed
        return seed

    def _reset_one(self, env_id: int) -> None:
        for _ in range(self._max_retry):  # each failure raises once _fail_count reaches max_retry
            env = self._envs[env_id]
            seed = self._seed_args(env_id)
            param = self._reset_param[env_id]
            try:
                if self._reset_timeout is None:
                    obs = _seed_and_reset(env, seed, param)
                else:
                    obs = self._timed_call(env_id, "reset", partial(_seed_and_reset, env, seed, param))
            except CallTimeout as e:
                self._on_failure(env_id, "reset", str(e), lost=True)
                continue
            except Exception:  # noqa: BLE001 -- any env error is reported with its traceback
                self._on_failure(env_id, "reset", traceback.format_exc(), lost=False)
                continue
            self._check_obs(env_id, "reset", obs)
            self._ready_obs[env_id] = obs
            self._env_states[env_id] = EnvState.RUN
            return
        raise AssertionError("unreachable: _on_failure raises after max_retry failures")

    def _timed_call(self, env_id: int, op: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` limited to ``env.manager.<op>_timeout`` seconds; past it the env is abandoned (CallTimeout)."""
        limit = self._step_timeout if op == "step" else self._reset_timeout
        if self._timed is None:
            self._timed = TimedCalls(type(self).__name__)
        env = self._envs[env_id]
        try:
            return self._timed.call(env_id, fn, limit, op, on_abandon=env.close)
        except CallTimeout as e:
            self._abandoned.add(env_id)
            raise CallTimeout(f"{e} (env.manager.{op}_timeout={limit:g}; raise it if the env is only slow)") from None

    def _check_obs(self, env_id: int, op: str, obs: Any) -> None:
        shape = self._obs_shape[env_id]
        if shape is not None and getattr(obs, "shape", None) != shape:
            err = shape_error(env_id, op, self._envs[env_id].observation_space, shape, getattr(obs, "shape", type(obs)))
            self.close()
            raise err

    def _on_failure(self, env_id: int, op: str, error_text: str, lost: bool) -> None:
        """Count a failed attempt; raise ``EnvError`` (after closing) when out of attempts, else recover the env."""
        self._fail_count[env_id] += 1
        if self._fail_count[env_id] >= self._max_retry:
            self._env_states[env_id] = EnvState.ERROR
            self.close()
            raise EnvError(
                f"env {env_id}: {op} failed {self._fail_count[env_id]} time(s) (max_retry={self._max_retry}, "
                f"retry_type={self._retry_type!r}); raise env.manager.max_retry to retry more. Last error:\n"
                f"{error_text}"
            )
        if self._retry_waiting_time > 0:
            time.sleep(self._retry_waiting_time)
        if lost or self._retry_type == "renew":
            self._renew(env_id)
            self._env_seed[env_id] = self._applied_seed[env_id]  # a rebuilt env starts from the same seed

    def _renew(self, env_id: int) -> None:
        old = self._envs[env_id]
        try:
            if env_id not in self._abandoned:  # an abandoned env is closed by its helper thread, if it ever returns
                old.close()
        except Exception:  # a broken env may fail to close too: log it, go on
            logger.warning("env %d: close() of the broken env failed", env_id, exc_info=True)
        self._abandoned.discard(env_id)
        self._envs[env_id] = self._env_fn[env_id]()
        if self._replay_path is not None:
            self._envs[env_id].enable_save_replay(self._replay_path[env_id])

    def close(self) -> None:
        """Close every env. Calling it again does nothing."""
        reference, self._reference_env = self._reference_env, None
        if reference is not None:
            reference.close()
        if self._closed:
            return
        self._closed = True
        envs, self._envs = getattr(self, "_envs", []), []
        self._ready_obs = {}
        self._env_states = [s if s in (EnvState.DONE, EnvState.ERROR) else EnvState.VOID for s in self._env_states]
        if self._timed is not None:
            self._timed.close()
            self._timed = None
        close_all(e for i, e in enumerate(envs) if i not in self._abandoned)

    # ---- stepping -----------------------------------------------------------------------------------------------
    def _raise_not_ready(self, actions: Mapping) -> None:
        if not isinstance(actions, Mapping):
            raise EnvError(f"step() takes a dict {{env_id: action}}, got {type(actions).__name__}")
        reasons = []
        for i in actions:
            if i in self._ready_obs:
                continue
            if not (isinstance(i, (int, np.integer)) and 0 <= i < self._env_num):
                reasons.append(f"{i!r} is not an env id (0..{self._env_num - 1})")
            else:
                reasons.append(f"env {i} is {self._env_states[i].name} (not waiting for an action)")
        raise EnvError(
            "step(): actions for envs that are not ready: " + "; ".join(reasons)
            + f". Send actions only for ready_obs_id = {sorted(self._ready_obs)}."
        )

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Step the given ready envs; returns ``{env_id: timestep}`` (a finished episode's timestep keeps its last obs).

        An env that raises is recovered (``max_retry``, ``retry_type``) and reports a ``done`` timestep with
        ``info['abnormal']``; out of attempts, the manager closes and raises ``EnvError``. An ``InvalidActionError``
        (the caller's mistake) propagates at once: the results of envs stepped before it in this call are lost.
        """
        self._check_open()
        ready = self._ready_obs
        if not isinstance(actions, Mapping) or not ready.keys() >= actions.keys():
            self._raise_not_ready(actions)
        envs, shapes = self._envs, self._obs_shape
        limited = self._step_timeout is not None
        timesteps = {}
        for env_id, action in actions.items():
            try:
                if limited:
                    ts = self._timed_call(env_id, "step", partial(envs[env_id].step, action))
                else:
                    ts = envs[env_id].step(action)
            except InvalidActionError:
                raise  # the caller's action is wrong: no retry can fix that
            except CallTimeout as e:
                timesteps[env_id] = self._step_failed(env_id, str(e), lost=True)
                continue
            except Exception:  # noqa: BLE001 -- any env error is reported with its traceback
                timesteps[env_id] = self._step_failed(env_id, traceback.format_exc())
                continue
            shape = shapes[env_id]
            if shape is not None and getattr(ts.obs, "shape", None) != shape:
                self._check_obs(env_id, "step", ts.obs)
            if ts.done:
                self._episode_end(env_id)
            else:
                ready[env_id] = ts.obs
            timesteps[env_id] = ts
        return timesteps

    def _episode_end(self, env_id: int) -> None:
        self._episode_count[env_id] += 1
        self._fail_count[env_id] = 0
        del self._ready_obs[env_id]
        if self._episode_count[env_id] >= self._episode_num:
            self._env_states[env_id] = EnvState.DONE
        elif self._auto_reset:
            self._env_states[env_id] = EnvState.RESET
            self._reset_one(env_id)
        else:
            self._env_states[env_id] = EnvState.NEED_RESET

    def _step_failed(self, env_id: int, error_text: str, lost: bool = False) -> BaseEnvTimestep:
        """Recover an env whose step failed; its episode ends with an ``info['abnormal']`` timestep."""
        last_obs = self._ready_obs.pop(env_id, None)
        self._on_failure(env_id, "step", error_text, lost)
        self._env_states[env_id] = EnvState.RESET
        self._reset_one(env_id)
        return abnormal_timestep(last_obs, error_text)

    # ---- seeds, replays, random actions -------------------------------------------------------------------------
    def seed(self, seed: int | list[int], dynamic_seed: bool | None = None) -> None:
        """Seed the envs at their next reset: an int gives env i ``seed + i``; a list gives one seed per env."""
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self._env_num)]
        elif isinstance(seed, (list, tuple)):
            if len(seed) != self._env_num:
                raise EnvError(f"seed(): got {len(seed)} seeds for {self._env_num} envs; give one per env or an int")
            seeds = [int(s) for s in seed]
        else:
            raise EnvError(f"seed(): expected an int or a list of ints, got {type(seed).__name__}")
        self._env_seed = [(s, dynamic_seed) for s in seeds]
        self._seed_action_spaces(seeds)

    def _seed_action_spaces(self, seeds: list[int]) -> None:
        """Random actions come from each env's own action space here, which ``env.seed`` seeds."""

    def random_action(self) -> dict[int, Any]:
        """A random action for every ready env."""
        self._check_open()
        return {i: self._envs[i].random_action() for i in sorted(self._ready_obs)}

    def enable_save_replay(self, replay_path: str | list[str]) -> None:
        """Record videos: one folder per env (a single path gets an ``env_<i>`` subfolder per env)."""
        if isinstance(replay_path, (str, os.PathLike)):
            paths = [os.path.join(replay_path, f"env_{i}") for i in range(self._env_num)] \
                if self._env_num > 1 else [os.fspath(replay_path)]
        else:
            paths = [os.fspath(p) for p in replay_path]
            if len(paths) != self._env_num:
                raise EnvError(f"enable_save_replay(): got {len(paths)} paths for {self._env_num} envs")
        self._replay_path = paths
        if not self._closed:
            self._apply_replay_paths()

    def _apply_replay_paths(self) -> None:
        assert self._replay_path is not None  # called by enable_save_replay once it has set the paths
        for e, p in zip(self._envs, self._replay_path):
            e.enable_save_replay(p)

    # ---- exact resume -------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue the same episodes after ``load_state_dict`` (envs are pickled)."""
        self._check_open()
        state = self._common_state()
        state["envs"] = [pickle_env(i, e) for i, e in enumerate(self._envs)]
        return state

    def _common_state(self) -> dict[str, Any]:
        return {
            "manager": type(self).__name__,
            "env_num": self._env_num,
            "env_states": [int(s) for s in self._env_states],
            "episode_count": list(self._episode_count),
            "fail_count": list(self._fail_count),
            "ready_obs": copy.deepcopy(self._ready_obs),
            "env_seed": list(self._env_seed),
            "applied_seed": list(self._applied_seed),
            "reset_param": copy.deepcopy(self._reset_param),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()``: the envs, counters and ready observations (launches the manager if needed)."""
        self._check_state(state)
        if state.get("arrived"):
            raise EnvError(
                f"{type(self).__name__}: this state holds results of steps still in flight in an async manager; "
                "load it into an AsyncSubprocessEnvManager"
            )
        envs = [pickle.loads(b) if b is not None else self._env_fn[i]() for i, b in enumerate(state["envs"])]
        if not self._closed:
            old, self._envs = self._envs, []
            for e in old:
                e.close()
        self._create_envs(envs)
        self._closed = False
        self._load_common_state(state)

    def _check_state(self, state: Mapping[str, Any]) -> None:
        if not isinstance(state, Mapping) or "envs" not in state or "env_num" not in state:
            raise EnvError(f"{type(self).__name__}.load_state_dict: not an env manager state_dict")
        if state["env_num"] != self._env_num:
            raise EnvError(
                f"{type(self).__name__}.load_state_dict: the state has {state['env_num']} envs, this manager has "
                f"{self._env_num}; build the manager with the same number of envs"
            )

    def _load_common_state(self, state: Mapping[str, Any]) -> None:
        self._env_states = [EnvState(s) for s in state["env_states"]]
        self._episode_count = list(state["episode_count"])
        self._fail_count = list(state["fail_count"])
        self._ready_obs = copy.deepcopy(dict(state["ready_obs"]))
        self._env_seed = list(state["env_seed"])
        self._applied_seed = list(state["applied_seed"])
        self._reset_param = {int(k): dict(v) for k, v in state["reset_param"].items()}


def _seed_and_reset(env: BaseEnv, seed: tuple[int, bool | None] | None, param: Mapping[str, Any]) -> Any:
    if seed is not None:
        apply_seed(env, seed)
    return env.reset(**param)
