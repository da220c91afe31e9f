"""The serial-collector interface, the plumbing the sample and episode collectors share, and their factory."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding.policy.tensor_io import di_engine_view
from ding.torch_utils import to_tensor
from ding.utils import (
    SERIAL_COLLECTOR_REGISTRY,
    ConfigError,
    EnvError,
    apply_default_torch_threads,
    config_of,
    deep_merge_dicts,
    import_module,
)
from ding.utils.worker_logs import WorkerLogs

from .cache_pool import CachePool, TrajBuffer  # noqa: F401 (DI-engine's import path)
from .episode_callback import EpisodeCallback, build_episode_callbacks, call_callback, check_callback
from .step_core import EnvStepCore

INF = float("inf")


class ISerialCollector(ABC):
    """Collects data with a collect-mode policy from a vectorised env manager.

    A collector written for DI-engine (a direct subclass that is not a :class:`BaseSerialCollector`) gets the policy
    views it is given in ``reset_policy`` in DI-engine's convention (forward returns tensors; see
    :func:`ding.policy.tensor_io.di_engine_view`); ding's own collectors work with numpy.
    """

    config: dict = {}
    # whether the collector takes ding's numpy policy views as they are (False: DI-engine's tensor convention)
    numpy_policy_views: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("reset_policy")
        if cls.numpy_policy_views or own is None or getattr(own, "di_engine_convention", False):
            return

        def reset_policy(self: Any, _policy: Any = None) -> None:
            if _policy is not None:
                _policy = [di_engine_view(p) for p in _policy] if isinstance(_policy, list) else \
                    di_engine_view(_policy)
            own(self, _policy)

        reset_policy.di_engine_convention = True  # type: ignore[attr-defined]
        reset_policy.__doc__ = own.__doc__
        cls.reset_policy = reset_policy  # type: ignore[method-assign]

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    @abstractmethod
    def reset_env(self, _env: Any = None) -> None:
        """Replace (and launch) the env manager, or reset the current one when None."""

    @abstractmethod
    def reset_policy(self, _policy: Any = None) -> None:
        """Replace the policy, or reset the current one when None."""

    @abstractmethod
    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        """``reset_env`` + ``reset_policy`` and clear every counter and cache."""

    @abstractmethod
    def collect(self, *args: Any, **kwargs: Any) -> Any:
        """Collect data: a list of samples or episodes, or for the battle collectors a ``(data, info)`` pair with one
        list per policy (DI-engine's shape)."""

    @property
    @abstractmethod
    def envstep(self) -> int:
        """Total env steps collected."""


def _policy_attr(policy: Any, name: str, default: Any) -> Any:
    get = getattr(policy, "get_attribute", None)
    if not callable(get):
        return default
    try:
        return get(name)
    except (AttributeError, KeyError):
        return default


def _to_float(x: Any) -> float:
    return float(np.asarray(x, dtype=np.float64).reshape(-1).sum())


class BaseSerialCollector(ISerialCollector):
    """Shared plumbing: logger and TensorBoard writer, env/policy (re)setting, per-env episode bookkeeping,
    episode callbacks, periodic statistics, state for exact resume, ``close``."""

    numpy_policy_views = True

    @property
    def _collect_print_freq(self) -> int:
        """DI-engine's attribute for ``cfg.collect_print_freq`` (its tests and subclasses read it)."""
        return int(self._cfg.get("collect_print_freq", 100))

    def __init__(
            self,
            cfg: Mapping,
            env: Any = None,
            policy: Any = None,
            tb_logger: Any = None,
            exp_name: str = 'default_experiment',
            instance_name: str = 'collector',
    ) -> None:
        apply_default_torch_threads()  # a loop built by hand gets the pipelines' thread default
        self._cfg = deep_merge_dicts(self.default_config(), cfg)
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._closed = False
        self._logs = WorkerLogs(exp_name, instance_name, tb_logger)
        self._logger, self._tb_logger = self._logs.logger, self._logs.tb_logger
        self._env: Any = None
        self._env_num = 0
        self._policy: Any = None
        self._callbacks: list[EpisodeCallback] = []
        for cb in build_episode_callbacks(self._cfg.get("callbacks"), self._cfg.get("import_names")):
            self.register_callback(cb)
        self._missing_return_warned = False
        self._finished: deque[dict] = deque(maxlen=10_000)  # for pop_finished_episodes
        self.reset(policy, env)

    # ------------------------------------------------------------------ env / policy
    def reset_env(self, _env: Any = None) -> None:
        if _env is not None:
            self._env = _env
            if getattr(_env, "closed", True):
                _env.launch()
            self._env_num = _env.env_num
        elif self._env is not None:
            self._env.reset()
        self._reset_episodes()

    def reset_policy(self, _policy: Any = None) -> None:
        if _policy is not None:
            if self._env is None:
                raise RuntimeError(f"{type(self).__name__}.reset_policy: set the env manager first (reset_env)")
            self._policy = _policy
            self._on_new_policy(_policy)
        if self._policy is not None:
            self._policy.reset()

    def _on_new_policy(self, policy: Any) -> None:
        """Read what the collector needs from the policy (subclasses extend)."""
        self._on_policy = bool(_policy_attr(policy, "on_policy", False))

    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        if _env is not None:
            self.reset_env(_env)
        if _policy is not None:
            self.reset_policy(_policy)
        self._reset_episodes()
        self._total_envstep_count = 0
        self._total_episode_count = 0
        self._total_train_sample_count = 0
        self._last_log_iter = 0
        self._reset_log_window()

    def _reset_episodes(self) -> None:
        n = self._env_num
        self._caches: list[Any] = [self._new_cache() for _ in range(n)]
        self._env_steps = [0] * n  # steps of each env's current episode
        self._env_samples = [0] * n  # train samples from each env's current episode
        self._episode_open = [False] * n  # on_episode_start fired for the current episode
        # observe -> act -> step; it keeps the observation and policy output each env last acted on (sent_obs/out)
        self._core = EnvStepCore(self._env, bool(self._cfg.get("deepcopy_obs", False)),
                                 bool(self._cfg.get("transform_obs", False)))

    def _new_cache(self) -> Any:
        """An env's empty trajectory cache (a list of transitions; the battle collectors keep one per player)."""
        return []

    def _cache_state(self, cache: Any) -> Any:
        return list(cache)

    def _load_cache(self, state: Any) -> Any:
        return list(state)

    def _check_ready(self, where: str) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{where}: the collector is closed")
        if self._env is None or self._policy is None:
            raise RuntimeError(
                f"{type(self).__name__}.{where}: set the env manager and the policy first (constructor or reset)"
            )

    def _idle_error(self) -> EnvError:
        """Why a step found no env ready for an action and none still stepping."""
        if getattr(self._env, "done", False):
            return EnvError(
                f"{type(self).__name__}: every env finished its episode_num episodes, nothing is left to collect; "
                "use env.manager.episode_num=inf for a training collector"
            )
        return EnvError(f"{type(self).__name__}: the env manager has no env ready for an action")

    # ------------------------------------------------------------------ callbacks
    def register_callback(self, callback: EpisodeCallback) -> None:
        """Attach an episode callback instance (called in registration order)."""
        self._callbacks.append(check_callback(callback))
        callback.setup(self)

    @property
    def callbacks(self) -> list[EpisodeCallback]:
        return list(self._callbacks)

    def _callback_step(self, env_id: int, timestep: Any, transition: dict) -> None:
        if not self._episode_open[env_id]:
            self._episode_open[env_id] = True
            for cb in self._callbacks:
                call_callback(cb, "on_episode_start", env_id)
        for cb in self._callbacks:
            call_callback(cb, "on_episode_step", env_id, timestep, transition)

    def _callback_postprocess(self, env_id: int, trajectory: list, samples: list) -> list:
        for cb in self._callbacks:
            new = call_callback(cb, "on_postprocess_trajectory", env_id, trajectory, samples)
            if new is not None:
                samples = new
        return samples

    def _callback_sample_end(self, data: list) -> list:
        for cb in self._callbacks:
            new = call_callback(cb, "on_sample_end", data)
            if new is not None:
                data = new
        return data

    def pop_finished_episodes(self) -> list[dict]:
        """The episodes finished since the last call (at most the newest 10,000), oldest first: each
        ``{'env_id', 'eval_episode_return', 'step', 'train_sample', 'train_iter'}`` (+ ``'custom'`` metrics)."""
        episodes = list(self._finished)
        self._finished.clear()
        return episodes

    # ------------------------------------------------------------------ episode bookkeeping
    def _end_episode(self, env_id: int, info: Mapping, train_iter: int,
                     player_returns: list[float] | None = None) -> None:
        """Record a finished episode, reset the policy's per-env state and fire ``on_episode_end``
        (``player_returns``: every player's return, for the battle collectors; ``info`` is the first player's)."""
        ret = info.get("eval_episode_return")
        if ret is None and not self._missing_return_warned:
            self._missing_return_warned = True
            self._logger.warning("the env's last timestep has no info['eval_episode_return']; returns are not logged")
        episode: dict[str, Any] = {
            "env_id": env_id,
            "eval_episode_return": None if ret is None else _to_float(ret),
            "step": self._env_steps[env_id],
            "train_sample": self._env_samples[env_id],
            "train_iter": train_iter,
        }
        if player_returns is not None:
            episode["player_returns"] = list(player_returns)
        if self._callbacks:
            custom: dict[str, float] = {}
            for cb in self._callbacks:
                metrics = call_callback(cb, "on_episode_end", env_id, episode)
                if metrics:
                    custom.update(metrics)
            if custom:
                episode["custom"] = custom
        self._episode_open[env_id] = False
        self._env_steps[env_id] = 0
        self._env_samples[env_id] = 0
        self._total_episode_count += 1
        self._log_episodes.append(episode)
        self._finished.append(episode)
        self._policy.reset([env_id])

    def _drop_episode(self, env_id: int, info: Mapping) -> None:
        """An abnormal episode (the env failed): forget its unprocessed transitions; the manager has reset it."""
        self._logger.info(f"env {env_id}: abnormal episode dropped ({len(self._caches[env_id])} cached transitions); "
                          f"error: {str(info.get('error', ''))[-300:]}")
        self._caches[env_id] = self._new_cache()
        self._env_steps[env_id] = 0
        self._env_samples[env_id] = 0
        self._episode_open[env_id] = False
        self._policy.reset([env_id])

    # ------------------------------------------------------------------ statistics
    def _reset_log_window(self) -> None:
        self._log_episodes: list[dict] = []
        self._log_steps = 0
        self._log_samples = 0
        self._log_time = 0.0

    def _record_collect(self, steps: int, samples: int, duration: float, train_iter: int, log: bool) -> None:
        self._total_envstep_count += steps
        self._total_train_sample_count += samples
        if not log:
            self._log_episodes.clear()
            return
        self._log_steps += steps
        self._log_samples += samples
        self._log_time += duration
        self._output_log(train_iter)

    def _output_log(self, train_iter: int) -> None:
        """Every ``collect_print_freq`` train iterations (with an episode finished): one log line + TensorBoard."""
        if train_iter - self._last_log_iter < self._cfg.collect_print_freq or not self._log_episodes:
            return
        self._last_log_iter = train_iter
        eps = self._log_episodes
        returns = np.asarray([e["eval_episode_return"] for e in eps if e["eval_episode_return"] is not None])
        lengths = np.asarray([e["step"] for e in eps], dtype=np.float64)
        t = max(self._log_time, 1e-9)
        stats = {
            "episode_count": len(eps),
            "episode_length_mean": float(lengths.mean()),
            "envstep_per_sec": self._log_steps / t,
            "sample_per_sec": self._log_samples / t,
            "total_envstep_count": self._total_envstep_count,
            "total_episode_count": self._total_episode_count,
            "total_train_sample_count": self._total_train_sample_count,
        }
        if returns.size:
            stats.update(episode_return_mean=float(returns.mean()), episode_return_std=float(returns.std()),
                         episode_return_max=float(returns.max()), episode_return_min=float(returns.min()))
        custom: dict[str, list[float]] = {}
        for e in eps:
            for k, v in e.get("custom", {}).items():
                custom.setdefault(k, []).append(float(v))
        for k, vs in custom.items():
            stats[f"custom/{k}"] = float(np.mean(vs))
        player_returns = np.asarray([e["player_returns"] for e in eps if "player_returns" in e], dtype=np.float64)
        for i, mean in enumerate(player_returns.mean(axis=0) if player_returns.size else ()):
            stats[f"player{i}_return_mean"] = float(mean)
        line = (f"[{self._instance_name}] iter {train_iter:,} | env steps {self._total_envstep_count:,} | "
                f"{len(eps)} episodes")
        if returns.size:
            line += (f", return {stats['episode_return_mean']:.4g} (min {stats['episode_return_min']:.4g}, "
                     f"max {stats['episode_return_max']:.4g})")
        if player_returns.size:
            line += ", player returns " + " / ".join(f"{m:.4g}" for m in player_returns.mean(axis=0))
        line += (f", length {stats['episode_length_mean']:.4g} | {stats['envstep_per_sec']:,.0f} steps/s, "
                 f"{stats['sample_per_sec']:,.0f} samples/s")
        self._logger.info(line)
        if self._tb_logger is not None:
            for k, v in stats.items():
                self._tb_logger.add_scalar(f"{self._instance_name}_iter/{k}", v, train_iter)
                if k != "total_envstep_count":
                    self._tb_logger.add_scalar(f"{self._instance_name}_step/{k}", v, self._total_envstep_count)
        self._reset_log_window()

    # ------------------------------------------------------------------ state, lifecycle
    @property
    def envstep(self) -> int:
        return self._total_envstep_count

    @envstep.setter
    def envstep(self, value: int) -> None:
        self._total_envstep_count = value

    @property
    def env(self) -> Any:
        return self._env

    @property
    def policy(self) -> Any:
        return self._policy

    def state_dict(self) -> dict[str, Any]:
        """Counters, per-env partial trajectories and the env manager's state (for exact resume)."""
        state = {
            "envstep": self._total_envstep_count,
            "episode_count": self._total_episode_count,
            "train_sample_count": self._total_train_sample_count,
            "last_log_iter": self._last_log_iter,
            "caches": [self._cache_state(c) for c in self._caches],
            "env_steps": list(self._env_steps),
            "env_samples": list(self._env_samples),
            "episode_open": list(self._episode_open),
            "sent_obs": dict(self._core.sent_obs),
            "sent_out": dict(self._core.sent_out),
        }
        if self._env is not None and callable(getattr(self._env, "state_dict", None)):
            state["env"] = self._env.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if len(state["caches"]) != self._env_num:
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state has {len(state['caches'])} envs, "
                             f"this collector has {self._env_num}")
        if "env" in state and self._env is not None:
            self._env.load_state_dict(state["env"])
        self._total_envstep_count = state["envstep"]
        self._total_episode_count = state["episode_count"]
        self._total_train_sample_count = state["train_sample_count"]
        self._last_log_iter = state["last_log_iter"]
        self._caches = [self._load_cache(c) for c in state["caches"]]
        self._env_steps = list(state["env_steps"])
        self._env_samples = list(state["env_samples"])
        self._episode_open = list(state["episode_open"])
        self._core.sent_obs = dict(state.get("sent_obs", {}))
        self._core.sent_out = dict(state.get("sent_out", {}))

    def close(self) -> None:
        """Close the env manager, flush the TensorBoard writer (close it if the collector made it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._env is not None:
            self._env.close()
        self._logs.close()

    def __enter__(self) -> BaseSerialCollector:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def traj_len_of(n_sample: int | None, env_num: int, unroll_len: int) -> float:
    """DI-engine's trajectory chunk length: ``max(unroll_len, ceil(n_sample / env_num))`` (inf without n_sample)."""
    if n_sample is None:
        return INF
    return max(unroll_len, math.ceil(n_sample / env_num))


def create_serial_collector(cfg: Mapping, **kwargs: Any) -> ISerialCollector:
    """Build the collector ``cfg.type`` (default 'sample') names, after importing ``cfg.import_names``."""
    return get_serial_collector_cls(cfg)(cfg=cfg, **kwargs)


def get_serial_collector_cls(cfg: Mapping) -> type:
    import_module(cfg.get("import_names"))
    return SERIAL_COLLECTOR_REGISTRY.get(cfg.get("type", "sample"), where="policy.collect.collector.type")


def to_tensor_transitions(data: list[dict[str, Any]], shallow_copy_next_obs: bool = True) -> list[dict[str, Any]]:
    """Transitions with tensors instead of arrays (scalars kept). With ``shallow_copy_next_obs`` each ``next_obs`` is
    the next transition's ``obs`` object (memory saving; only for consecutive steps of one episode)."""
    if not data:
        return []
    if "next_obs" not in data[0]:
        return [to_tensor(d, transform_scalar=False) for d in data]
    out = [{k: (v if k == "next_obs" else to_tensor(v, transform_scalar=False)) for k, v in d.items()} for d in data]
    for i, d in enumerate(out):
        if shallow_copy_next_obs and i + 1 < len(out):
            d["next_obs"] = out[i + 1]["obs"]
        else:
            d["next_obs"] = to_tensor(d["next_obs"], transform_scalar=False)
    return out


def check_n_sample_n_episode(policy_cfg: Any, collector: str) -> None:
    """A sample collector reads ``policy.collect.n_sample``; also setting ``n_episode`` is a mistake."""
    collect = getattr(policy_cfg, "collect", None) if policy_cfg is not None else None
    if isinstance(collect, Mapping) and collect.get("n_sample") is not None and collect.get("n_episode") is not None:
        raise ConfigError(
            f"policy.collect: both n_sample ({collect['n_sample']}) and n_episode ({collect['n_episode']}) are set, "
            f"but the '{collector}' collector collects a number of samples: remove n_episode (or use the 'episode' "
            "collector with n_episode and no n_sample)"
        )
