"""The serial-evaluator interface and shared plumbing, ``VectorEvalMonitor`` (fixed per-env episode quotas), factory."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding.utils import (
    SERIAL_EVALUATOR_REGISTRY,
    apply_default_torch_threads,
    config_of,
    deep_merge_dicts,
    import_module,
)
from ding.utils.worker_logs import WorkerLogs


class ISerialEvaluator(ABC):
    """Evaluates an eval-mode policy; decides when (``should_eval``) and whether training can stop (``eval``)."""

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    @abstractmethod
    def reset_env(self, _env: Any = None) -> None:
        """Replace the evaluation env, or reset the current one when None."""

    @abstractmethod
    def reset_policy(self, _policy: Any = None) -> None:
        """Replace the policy, or reset the current one when None."""

    @abstractmethod
    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        """``reset_env`` + ``reset_policy`` and forget the best result and the evaluation cadence."""

    @abstractmethod
    def close(self) -> None:
        """Release the env and loggers (idempotent)."""

    @abstractmethod
    def should_eval(self, train_iter: int) -> bool:
        """Whether to evaluate at ``train_iter``."""

    @abstractmethod
    def eval(self, save_ckpt_fn: Callable | None = None, train_iter: int = -1, envstep: int = -1) -> tuple[bool, Any]:
        """Evaluate; return ``(stop_flag, result)``. An evaluator may take keyword arguments of its own."""


class BaseSerialEvaluator(ISerialEvaluator):
    """Shared plumbing: loggers, env/policy setting, ``should_eval`` cadence, best result, ``state_dict``, close."""

    def __init__(
            self,
            cfg: Mapping,
            env: Any = None,
            policy: Any = None,
            tb_logger: Any = None,
            exp_name: str = 'default_experiment',
            instance_name: str = 'evaluator',
    ) -> None:
        apply_default_torch_threads()  # a loop built by hand gets the pipelines' thread default
        self._cfg = deep_merge_dicts(self.default_config(), cfg)
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._closed = False
        self._logs = WorkerLogs(exp_name, instance_name, tb_logger)
        self._logger, self._tb_logger = self._logs.logger, self._logs.tb_logger
        self._env: Any = None
        self._policy: Any = None
        self.reset(policy, env)

    def reset_policy(self, _policy: Any = None) -> None:
        if _policy is not None:
            self._policy = _policy
        if self._policy is not None:
            self._policy.reset()

    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        if _env is not None:
            self.reset_env(_env)
        if _policy is not None:
            self.reset_policy(_policy)
        self._best_return = self._initial_best()
        self._last_eval_iter = -1

    def _initial_best(self) -> Any:
        return float("-inf")

    def should_eval(self, train_iter: int) -> bool:
        """True at the first call, then once ``eval_freq`` iterations have passed since the last True (DI-engine's
        cadence; calling twice at the same iteration gives True only once)."""
        if train_iter == self._last_eval_iter:
            return False
        if train_iter - self._last_eval_iter < self._cfg.eval_freq and train_iter != 0:
            return False
        self._last_eval_iter = train_iter
        return True

    def _check_ready(self, where: str) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{where}: the evaluator is closed")
        if self._env is None or self._policy is None:
            raise RuntimeError(f"{type(self).__name__}.{where}: set the env and the policy first (constructor/reset)")

    @property
    def best_return(self) -> Any:
        """Best mean return (or metric) seen so far; settable (e.g. on resume)."""
        return self._best_return

    @best_return.setter
    def best_return(self, value: Any) -> None:
        self._best_return = value

    # DI-engine's attribute name
    _max_episode_return = property(lambda self: self._best_return,
                                   lambda self, v: setattr(self, "_best_return", v))

    @property
    def env(self) -> Any:
        return self._env

    @property
    def policy(self) -> Any:
        return self._policy

    def state_dict(self) -> dict[str, Any]:
        return {"best_return": self._best_return, "last_eval_iter": self._last_eval_iter}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._best_return = state["best_return"]
        self._last_eval_iter = state["last_eval_iter"]

    def _close_env(self) -> None:
        if self._env is not None and callable(getattr(self._env, "close", None)):
            self._env.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_env()
        self._logs.close()

    def __enter__(self) -> BaseSerialEvaluator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class VectorEvalMonitor:
    """Fixed per-env episode quotas, so envs with short episodes do not contribute more episodes to the mean.

    ``n_episode`` episodes over ``env_num`` envs: env ``i`` runs ``n_episode // env_num`` episodes, plus one for the
    first ``n_episode % env_num`` envs (5 episodes on 3 envs: 2, 2, 1). Results past an env's quota are ignored.
    """

    def __init__(self, env_num: int, n_episode: int) -> None:
        if env_num < 1 or n_episode < 1:
            raise ValueError(f"VectorEvalMonitor: env_num and n_episode must be >= 1, got {env_num}, {n_episode}")
        base, extra = divmod(n_episode, env_num)
        self._env_num = env_num
        self._n_episode = n_episode
        self._quota = [base + (1 if i < extra else 0) for i in range(env_num)]
        self._reward: dict[int, list[float]] = {i: [] for i in range(env_num)}
        self._info: dict[int, list[Any]] = {i: [] for i in range(env_num)}
        self._video: dict[int, list[np.ndarray]] = {i: [] for i in range(env_num)}

    @property
    def quota(self) -> list[int]:
        return list(self._quota)

    def env_finished(self, env_id: int) -> bool:
        return len(self._reward[env_id]) >= self._quota[env_id]

    def is_finished(self) -> bool:
        return all(len(self._reward[i]) >= q for i, q in enumerate(self._quota))

    def update_info(self, env_id: int, info: Any) -> None:
        if len(self._info[env_id]) < self._quota[env_id]:
            self._info[env_id].append(info)

    def update_reward(self, env_id: int, reward: Any) -> None:
        if not self.env_finished(env_id):
            self._reward[env_id].append(float(np.asarray(reward, dtype=np.float64).reshape(-1).sum()))

    def update_video(self, imgs: Mapping[int, Any]) -> None:
        """Add one frame per env (``{env_id: HWC image}``) to the video of the env's first episode."""
        for env_id, img in imgs.items():
            if not self._reward[env_id]:
                self._video[env_id].append(np.asarray(img))

    def get_video(self) -> np.ndarray | None:
        """The recorded first episodes as ``[N, T, C, H, W]`` uint8 (shorter ones padded with their last frame)."""
        clips = [np.stack(v) for v in self._video.values() if v]
        if not clips:
            return None
        t = max(c.shape[0] for c in clips)
        padded = [np.concatenate([c, np.repeat(c[-1:], t - c.shape[0], 0)]) if c.shape[0] < t else c for c in clips]
        return np.stack(padded).transpose(0, 1, 4, 2, 3).astype(np.uint8)

    def get_episode_return(self) -> list[float]:
        """Every finished episode's return, env by env."""
        return [r for i in range(self._env_num) for r in self._reward[i]]

    get_episode_reward = get_episode_return  # DI-engine's older name

    def get_latest_reward(self, env_id: int) -> float:
        return self._reward[env_id][-1]

    def get_current_episode(self) -> int:
        """Number of episodes finished so far."""
        return sum(len(v) for v in self._reward.values())

    def get_episode_info(self) -> dict[str, Any] | None:
        """``{key: [values...], key + "_mean": mean}`` over the info dicts given to ``update_info`` (None if none)."""
        infos = [d for i in range(self._env_num) for d in self._info[i] if isinstance(d, Mapping)]
        if not infos:
            return None
        out: dict[str, Any] = {}
        for k in infos[0]:
            values = [d[k] for d in infos if k in d]
            out[k] = values
            if all(np.isscalar(v) and isinstance(v, (int, float, np.number)) for v in values):
                out[k + "_mean"] = float(np.mean(values))
        return out


def create_serial_evaluator(cfg: Mapping, **kwargs: Any) -> ISerialEvaluator:
    """Build the evaluator ``cfg.type`` (default 'interaction') names, after importing ``cfg.import_names``."""
    return get_serial_evaluator_cls(cfg)(cfg=cfg, **kwargs)


def get_serial_evaluator_cls(cfg: Mapping) -> type:
    import_module(cfg.get("import_names"))
    return SERIAL_EVALUATOR_REGISTRY.get(cfg.get("type", "interaction"), where="policy.eval.evaluator.type")


def fmt_return(x: float) -> str:
    """A return for a log line: one decimal for large values, 3 significant digits for small ones."""
    if not math.isfinite(x):
        return str(x)
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"
