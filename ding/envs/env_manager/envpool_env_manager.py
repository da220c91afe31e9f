"""The ``env_pool`` env manager: envpool's C++ vectorised envs (Atari, MuJoCo, ...) behind the env managers' surface.

DI-engine's type name and keys: ``create_config.env_manager = dict(type='env_pool')``, with the env's own keys in
``env`` (``env_id``, ``frame_stack``, ``collector_batch_size`` / ``evaluator_batch_size``). The manager is built as
every manager is, from ``[partial(EnvClass, cfg=c), ...]``: it never builds those envs, it reads their configs and
runs the same task on envpool's threads (``envpool_tasks.py`` says which task, with which options).

Semantics the collectors rely on, as the other managers give them: ``ready_obs`` holds every env waiting for an
action; ``step({env_id: action})`` steps those envs (any subset) and returns ``{env_id: BaseEnvTimestep}``; an env
whose episode ends is restarted at once through envpool's autoreset (its new observation is in ``ready_obs``, its
last timestep keeps the final observation and ``info['eval_episode_return']``; with Atari's ``episodic_life`` a
lost life continues the game, ``info['lives']`` says how many are left); ``info['truncated']`` marks time limits.
Atari observations stay uint8 ``(frame_stack, 84, 84)``; MuJoCo observations are float32. Seeds: env ``i`` gets
``seed + i`` (or the i-th of a list); with ``dynamic_seed=False`` every ``reset()`` replays the same episodes, as
the other managers do.

Not available here: exact resume of episodes in flight (envpool cannot snapshot its envs: a resumed run starts new
episodes, see ``load_state_dict``), replays, and asynchronous batches (``batch_size`` < env count).
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding.config.ranges import at_least, greater_than
from ding.utils import ENV_MANAGER_REGISTRY, ConfigError, EnvError, apply_default_torch_threads

from ..env.base_env import BaseEnv, BaseEnvTimestep
from .envpool_tasks import EnvpoolTask, envpool_task
from .manager_utils import EnvState, ManagerSurface, check_manager_cfg

logger = logging.getLogger(__name__)

INSTALL_HINT = ("the 'env_pool' env manager needs envpool, which is not installed ({error}). Install it with "
                "pip install -e '.[envpool]' (CPython 3.11+, Linux/macOS/Windows wheels), or run the same config with "
                "env_manager type 'subprocess' (or 'base'): create_config.env_manager = dict(type='subprocess')")


def import_envpool() -> Any:
    """The ``envpool`` module, or one ``EnvError`` saying how to install it and which manager to use instead."""
    try:
        import envpool
    except ImportError as e:
        raise EnvError(INSTALL_HINT.format(error=e)) from e
    return envpool


@ENV_MANAGER_REGISTRY.register("env_pool")
class PoolEnvManager(ManagerSurface):
    """``PoolEnvManager(env_fn, cfg)``: one envpool pool of ``len(env_fn)`` envs, stepped in one batch call."""

    config = dict(
        episode_num=float("inf"),  # episodes each env runs before it is done (inf: until the caller stops)
        # DI-engine's key: envs per answer. Only synchronous batches (all stepped envs answer together) are
        # supported; None or the env count.
        batch_size=None,
        num_threads=0,  # envpool's worker threads (0: envpool's default, one per env up to the core count)
    )
    # keys of the other managers, accepted (and ignored) so one env.manager dict works for every type
    open_config_keys = ("max_retry", "retry_type", "auto_reset", "step_timeout", "reset_timeout",
                        "retry_waiting_time", "shared_memory", "context", "wait_num", "step_wait_timeout")
    config_ranges = {"episode_num": greater_than(0), "batch_size": at_least(1, integer=True),
                     "num_threads": at_least(0, integer=True)}

    def __init__(self, env_fn: list[Callable[[], BaseEnv]], cfg: Mapping | None = None) -> None:
        if not isinstance(env_fn, (list, tuple)) or not env_fn:
            raise EnvError(f"PoolEnvManager: env_fn must be a non-empty list of partial(EnvClass, cfg=...), "
                           f"got {env_fn!r}")
        cfg = {k: v for k, v in dict(cfg or {}).items() if k not in self.open_config_keys}
        self._cfg = check_manager_cfg(self, cfg)
        self._env_num = len(env_fn)
        if self._cfg.batch_size not in (None, self._env_num):
            raise ConfigError(
                f"env.manager.batch_size={self._cfg.batch_size}: the 'env_pool' manager steps its {self._env_num} "
                f"envs in synchronous batches only; set the batch size to the env count ({self._env_num}) or leave "
                "it out"
            )
        self._env_cfg = _env_cfg_of(env_fn)
        for side in ("collector", "evaluator"):  # DI-engine's env keys of this manager
            size, num = self._env_cfg.get(f"{side}_batch_size"), self._env_cfg.get(f"{side}_env_num")
            if size is not None and num is not None and size != num:
                raise ConfigError(
                    f"env.{side}_batch_size={size}: the 'env_pool' manager steps its envs in synchronous batches "
                    f"only; set it to env.{side}_env_num ({num}) or leave it out"
                )
        self._envpool = import_envpool()
        apply_default_torch_threads()
        self._task: EnvpoolTask = envpool_task(self._env_cfg, frozenset(self._envpool.list_all_envs()))
        self._pool: Any = None
        self._closed = True
        self._seeds: list[int] = list(range(self._env_num))
        self._dynamic_seed = True
        self._reseed = False  # a new seed waits for the next full reset
        self._fresh = False  # the pool has not been stepped since it was made
        self._spaces: tuple[Any, Any, Any] | None = None
        self._init_state()

    def _init_state(self) -> None:
        n = self._env_num
        self._env_states = [EnvState.VOID] * n
        self._episode_count = [0] * n
        self._ready_obs: dict[int, Any] = {}
        self._returns = np.zeros(n, dtype=np.float64)

    # ---- properties (the rest: ManagerSurface) ------------------------------------------------------------
    @property
    def task(self) -> EnvpoolTask:
        """The envpool task (id, family, options) this manager runs."""
        return self._task

    def env_info(self) -> dict[str, Any]:
        """What runs here: the envpool task and its options, the env count and the spaces."""
        obs, act, rew = self._get_spaces()
        return {"manager": "env_pool", "task_id": self._task.task_id, "family": self._task.family,
                "options": dict(self._task.options), "env_num": self._env_num, "observation_space": obs,
                "action_space": act, "reward_space": rew}

    def _get_spaces(self) -> tuple[Any, Any, Any]:
        if self._spaces is None:
            spec = self._envpool.make_spec(self._task.task_id, **self._task.options)
            obs = spec.observation_space
            if isinstance(obs, gym.spaces.Box) and obs.dtype == np.float64:
                obs = gym.spaces.Box(obs.low.astype(np.float32), obs.high.astype(np.float32), obs.shape, np.float32)
            act = spec.action_space
            if isinstance(act, gym.spaces.Box) and act.dtype == np.float64:
                act = gym.spaces.Box(act.low.astype(np.float32), act.high.astype(np.float32), act.shape, np.float32)
            self._spaces = (obs, act, gym.spaces.Box(-np.inf, np.inf, (1,), np.float32))
        return self._spaces

    def __repr__(self) -> str:
        return f"PoolEnvManager({self._task.task_id}, env_num={self._env_num}, " \
               f"{'closed' if self._closed else 'running'})"

    # ---- lifecycle ----------------------------------------------------------------------------------------------
    def launch(self, reset_param: Mapping[int, Mapping] | None = None) -> None:
        """Create the pool and reset every env (``reset_param`` is refused: envpool's resets take no arguments)."""
        if not self._closed:
            raise EnvError("PoolEnvManager: already launched; close() it before launching again")
        self._refuse_reset_param(reset_param)
        self._make_pool()
        self._closed = False
        try:
            self.reset()
        except BaseException:
            self.close()
            raise

    def _make_pool(self) -> None:
        if self._pool is not None:
            self._pool.close()
        self._pool = self._envpool.make(
            self._task.task_id, env_type="gymnasium", num_envs=self._env_num, batch_size=self._env_num,
            num_threads=int(self._cfg.num_threads), env_seed=list(self._seeds), **self._task.options)
        self._fresh = True  # not stepped yet: a reset replays its seeds without a new pool
        self._reseed = False
        self._get_spaces()[1].seed(self._seeds[0])  # random_action() draws reproducibly

    def reset(self, reset_param: Mapping[int, Mapping] | None = None) -> None:
        """Reset every env (episode counts back to 0). A seed given since, or ``dynamic_seed=False``, restarts the
        pool from its seeds (the same episodes again)."""
        self._check_open()
        self._refuse_reset_param(reset_param)
        if (self._reseed or not self._dynamic_seed) and not self._fresh:
            self._make_pool()  # envpool seeds a pool only when it is made (making an Atari pool is slow)
        self._episode_count = [0] * self._env_num
        self._ready_obs = {}
        self._reset_envs(np.arange(self._env_num))

    def _reset_envs(self, ids: np.ndarray) -> None:
        obs, info = self._pool.reset(ids.astype(np.int32))
        obs = self._cast_obs(obs)
        for k, env_id in enumerate(np.asarray(info["env_id"]).tolist()):
            self._ready_obs[env_id] = obs[k]
            self._env_states[env_id] = EnvState.RUN
            self._returns[env_id] = 0.0

    def _refuse_reset_param(self, reset_param: Mapping | None) -> None:
        if reset_param and any(reset_param.values()):
            raise EnvError("PoolEnvManager: envpool's resets take no arguments; reset_param is not supported "
                           "(use env_manager type 'subprocess' or 'base' for envs that need them)")

    def close(self) -> None:
        """Release the pool. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._ready_obs = {}
        self._env_states = [s if s == EnvState.DONE else EnvState.VOID for s in self._env_states]
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    # ---- stepping -----------------------------------------------------------------------------------------------
    def step(self, actions: Mapping[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Step the given ready envs in one envpool call; finished envs are reset at once (``ready_obs``)."""
        self._check_open()
        if not isinstance(actions, Mapping):
            raise EnvError(f"step() takes a dict {{env_id: action}}, got {type(actions).__name__}")
        if not actions:
            return {}
        not_ready = [i for i in actions if i not in self._ready_obs]
        if not_ready:
            raise EnvError(f"step(): actions for envs that are not ready: {not_ready}. Send actions only for "
                           f"ready_obs_id = {sorted(self._ready_obs)}.")
        ids = np.fromiter(actions.keys(), dtype=np.int32, count=len(actions))
        batch = self._action_batch(list(actions.values()))
        obs, rew, terminated, truncated, info = self._pool.step(batch, ids)
        self._fresh = False
        obs = self._cast_obs(obs)
        rew = np.asarray(rew, dtype=np.float32)
        answered = np.asarray(info["env_id"]).tolist()
        lives = info["lives"] if "lives" in info else None
        timesteps: dict[int, BaseEnvTimestep] = {}
        finished = []
        for k, env_id in enumerate(answered):
            self._returns[env_id] += float(rew[k])
            term, trunc = bool(terminated[k]), bool(truncated[k])
            done = term or trunc
            ts_info: dict[str, Any] = {"env_id": env_id, "truncated": trunc and not term}
            if lives is not None:  # Atari: as the atari env's info['lives']
                ts_info["lives"] = int(lives[k])
            if done:
                ts_info["eval_episode_return"] = float(self._returns[env_id])
                finished.append(env_id)
                del self._ready_obs[env_id]
            else:
                self._ready_obs[env_id] = obs[k]
            timesteps[env_id] = BaseEnvTimestep(obs[k], rew[k:k + 1], done, ts_info)
        if finished:
            self._episode_end(finished)
        return timesteps

    def _episode_end(self, env_ids: list[int]) -> None:
        again = []
        for env_id in env_ids:
            self._episode_count[env_id] += 1
            if self._episode_count[env_id] >= self._cfg.episode_num:
                self._env_states[env_id] = EnvState.DONE
            else:
                self._env_states[env_id] = EnvState.RESET
                again.append(env_id)
        if again:  # reset now, so the next observation of each is a new episode's first (not envpool's next step)
            self._autoreset(np.asarray(again, dtype=np.int32))

    def _autoreset(self, ids: np.ndarray) -> None:
        """Start the next episode of finished envs through envpool's own autoreset: the next step of a finished env
        resets it and ignores the action. An explicit ``pool.reset(ids)`` restarts an Atari game even with
        ``episodic_life`` (every training episode would be a first life); the autoreset continues the game after a
        lost life and starts a new one after game over, as the ``atari`` env does."""
        space = self._get_spaces()[1]
        if isinstance(space, gym.spaces.Discrete):
            actions = np.full(len(ids), int(space.start), dtype=np.int32)
        else:
            actions = np.zeros((len(ids), *space.shape), dtype=np.float64)
        obs, _, _, _, info = self._pool.step(actions, ids)
        obs = self._cast_obs(obs)
        for k, env_id in enumerate(np.asarray(info["env_id"]).tolist()):
            self._ready_obs[env_id] = obs[k]
            self._env_states[env_id] = EnvState.RUN
            self._returns[env_id] = 0.0

    def _action_batch(self, actions: list[Any]) -> np.ndarray:
        space = self._spaces[1] if self._spaces is not None else None
        if isinstance(space, gym.spaces.Discrete):
            batch = np.asarray([np.asarray(a).reshape(-1)[0] if np.ndim(a) else a for a in actions], dtype=np.int32)
            if batch.min() < space.start or batch.max() >= space.start + space.n:
                raise EnvError(f"step(): actions {batch.tolist()} outside the action space {space}")
            return batch
        batch = np.asarray([np.asarray(a, dtype=np.float64).reshape(-1) for a in actions])
        if space is not None and batch.shape[1:] != tuple(space.shape):
            raise EnvError(f"step(): actions of shape {batch.shape[1:]} do not fit the action space {space}")
        if not np.isfinite(batch).all():
            raise EnvError(f"step(): actions are not finite: {batch.tolist()}")
        return batch

    @staticmethod
    def _cast_obs(obs: np.ndarray) -> np.ndarray:
        return obs.astype(np.float32) if obs.dtype == np.float64 else obs

    # ---- seeds, replays, random actions -------------------------------------------------------------------------
    def seed(self, seed: int | list[int], dynamic_seed: bool | None = None) -> None:
        """Env ``i`` gets ``seed + i`` (or ``seed[i]``), applied at the next launch or full ``reset()``."""
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self._env_num)]
        elif isinstance(seed, (list, tuple)) and len(seed) == self._env_num:
            seeds = [int(s) for s in seed]
        else:
            raise EnvError(f"seed(): expected an int or one int per env ({self._env_num}), got {seed!r}")
        self._seeds = seeds
        self._dynamic_seed = True if dynamic_seed is None else bool(dynamic_seed)
        self._reseed = True
        self._fresh = False

    def random_action(self) -> dict[int, Any]:
        self._check_open()
        space = self.action_space
        return {i: space.sample() for i in sorted(self._ready_obs)}

    def enable_save_replay(self, replay_path: Any) -> None:
        raise EnvError("PoolEnvManager: envpool envs cannot record replays; evaluate with env_manager type "
                       "'subprocess' or 'base' to save videos (ding -m eval --replay-path DIR)")

    # ---- resume -------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The seeds and counters; not the episodes in flight (envpool cannot snapshot its envs)."""
        self._check_open()
        return {"manager": "PoolEnvManager", "env_num": self._env_num, "seeds": list(self._seeds),
                "dynamic_seed": self._dynamic_seed, "episode_count": list(self._episode_count)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the seeds and counters and start new episodes (one warning line: episodes that were in flight
        when the checkpoint was written are not continued)."""
        if not isinstance(state, Mapping) or state.get("manager") != "PoolEnvManager":
            raise EnvError("PoolEnvManager.load_state_dict: not a PoolEnvManager state (the checkpoint was written "
                           "with another env manager type; resume with that type)")
        if state["env_num"] != self._env_num:
            raise EnvError(f"PoolEnvManager.load_state_dict: the state has {state['env_num']} envs, this manager "
                           f"has {self._env_num}")
        logger.warning("env_pool: resumed with new episodes (envpool cannot save the episodes that were in flight)")
        self.seed(list(state["seeds"]), bool(state["dynamic_seed"]))
        if self._closed:
            self.launch()
        else:
            self.reset()
        self._episode_count = list(state["episode_count"])


def _env_cfg_of(env_fn: list[Callable[[], BaseEnv]]) -> dict[str, Any]:
    """The env config the envs would be built from (each entry ``partial(EnvClass, cfg=c)``, all for one env id)."""
    cfgs = []
    for i, fn in enumerate(env_fn):
        cfg = fn.keywords.get("cfg") if isinstance(fn, functools.partial) else None
        if not isinstance(cfg, Mapping):
            raise EnvError(
                f"PoolEnvManager: env_fn[{i}] is {fn!r}; the 'env_pool' manager reads each env's config from "
                "partial(EnvClass, cfg=...) (as the pipelines build it) and runs the same task in envpool"
            )
        cfgs.append(dict(cfg))
    ids = {str(c.get("env_id")) for c in cfgs}
    if len(ids) > 1:
        raise EnvError(f"PoolEnvManager: one pool runs one task, but the env configs name {sorted(ids)}")
    return cfgs[0]
