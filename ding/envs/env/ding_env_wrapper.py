"""Adapt any gymnasium 1.x environment to ding's ``BaseEnv`` interface."""
from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding.config.ranges import at_least
from ding.utils import ENV_REGISTRY, ENV_WRAPPER_REGISTRY, EnvError, deep_merge_dicts

from .base_env import BaseEnv, BaseEnvTimestep
from .classic_gym import ClassicGymEnv, is_classic_gym_env

_FLOAT32 = np.dtype(np.float32)


class InvalidActionError(EnvError, ValueError):
    """An action does not fit the env's action space (a caller's mistake: env managers never retry it)."""




@ENV_REGISTRY.register("ding_env_wrapper")
class DingEnvWrapper(BaseEnv):
    """A gymnasium env seen through ding's interface.

    ``DingEnvWrapper(gym.make('CartPole-v1'))`` wraps an instance; ``DingEnvWrapper(cfg=dict(env_id='CartPole-v1'))``
    builds one with ``gym.make``. ``terminated or truncated`` becomes ``done``; ``info['truncated']`` is set on every
    step; observations are float32 arrays, rewards float32 arrays of shape (1,), and the last step of an episode
    carries ``info['eval_episode_return']``. A subclass names the gymnasium class to build directly with
    ``gym_env_cls`` (and the config keys passed to its constructor with ``gym_env_cfg_keys``), or overrides
    ``_make_env``.
    """

    gym_env_cls: type | None = None  # built directly (no gym.make checker layers) instead of gym.make(env_id)
    gym_env_cfg_keys: tuple[str, ...] = ()  # config keys passed to gym_env_cls as keyword arguments

    config = dict(
        env_id=None,  # gymnasium id passed to gym.make when no env instance is given, e.g. 'CartPole-v1'
        env_wrapper="default",  # 'default' (none), or a list of registry names, dict(type, kwargs) or callables
        max_episode_steps=None,  # truncate episodes after this many steps (None: only the env's own time limit)
        act_scale=False,  # Box actions: the agent acts in [-1, 1], mapped affinely onto the env's [low, high]
        render_mode=None,  # passed to the env constructor; enable_save_replay switches it to 'rgb_array'
        # DI-engine's key: where `ding -m eval` records videos when --replay-path is not given (needs moviepy).
        # Training never records: call enable_save_replay(path) to record from any env.
        replay_path=None,
    )
    config_ranges = {"max_episode_steps": at_least(1, integer=True)}

    _cfg: EasyDict  # default_config() merged with the given cfg

    def __init__(self, env: gym.Env | None = None, cfg: Mapping | None = None) -> None:
        if isinstance(env, Mapping) and cfg is None:  # called as env_fn(cfg) by get_vec_env_setting
            env, cfg = None, env
        self._cfg = deep_merge_dicts(self.default_config(), cfg)
        self._owns_env = env is None
        if env is not None and is_classic_gym_env(env):
            env = ClassicGymEnv(env)  # DI-engine users' `gym.make(...)`: the classic package's API, converted
        self._env = env if env is not None else self._make_env()
        self._setup_spaces()
        self._seed: int | None = None
        self._dynamic_seed = True
        self._seed_pending = False
        self._max_steps = math.inf if self._cfg.max_episode_steps is None else int(self._cfg.max_episode_steps)
        self._elapsed = -1  # -1 until the first reset
        # the sum of the env's own reward scalars (SupportsFloat: python or numpy floats, whose type it keeps)
        self._episode_return: Any = 0.0

    # ---- construction -------------------------------------------------------------------------------------------
    def _make_env(self, render_mode: str | None = None) -> gym.Env:
        """Build the gymnasium env: ``gym_env_cls(...)`` when the class names one, else ``gym.make(cfg.env_id)``."""
        if self.gym_env_cls is not None:
            kwargs = {k: self._cfg[k] for k in self.gym_env_cfg_keys}
            mode = render_mode or self._cfg.render_mode
            if mode is not None:  # an env class without a render_mode argument still builds
                kwargs["render_mode"] = mode
            return self._apply_wrappers(self.gym_env_cls(**kwargs))
        env_id = self._cfg.env_id
        if env_id is None:
            raise EnvError(
                f"{type(self).__name__}: no env given and cfg.env_id is not set; pass a gymnasium env instance "
                "or set env_id (e.g. 'CartPole-v1')"
            )
        try:
            env = gym.make(env_id, render_mode=render_mode or self._cfg.render_mode)
        except gym.error.Error as e:
            raise EnvError(f"{type(self).__name__}: gym.make({env_id!r}) failed: {e}") from e
        return self._apply_wrappers(env)

    def _apply_wrappers(self, env: gym.Env) -> gym.Env:
        """Apply ``cfg.env_wrapper`` in order: registry names, ``dict(type=name, kwargs={...})`` or ``env -> env``."""
        spec = self._cfg.env_wrapper
        if spec in (None, "default"):
            return env
        if isinstance(spec, (str, Mapping)) or callable(spec):
            spec = [spec]
        for w in spec:
            kwargs: dict = {}
            if isinstance(w, Mapping):
                kwargs = dict(w.get("kwargs") or {})
                w = w.get("type")
            if isinstance(w, str):
                w = ENV_WRAPPER_REGISTRY.get(w, where="env.env_wrapper")
            if not callable(w):
                raise EnvError(
                    f"env.env_wrapper: {w!r} is not a wrapper; give a registered wrapper name, "
                    "dict(type=name, kwargs={...}) or a callable taking the env"
                )
            env = w(env, **kwargs)
        return env

    def _setup_spaces(self) -> None:
        obs_space = self._env.observation_space
        if isinstance(obs_space, gym.spaces.Box) and obs_space.dtype != _FLOAT32:
            obs_space = gym.spaces.Box(
                obs_space.low.astype(np.float32), obs_space.high.astype(np.float32), obs_space.shape, np.float32
            )
        self._observation_space = obs_space
        self._cast_obs = isinstance(obs_space, (gym.spaces.Box, gym.spaces.Discrete))
        act_space = self._env.action_space
        self._convert_action: Callable[[Any], Any]
        # The action bounds: ints [low, high) for Discrete, the low and high arrays for Box, None (unused) otherwise.
        self._act_low: Any = None
        self._act_high: Any = None
        if isinstance(act_space, gym.spaces.Discrete):
            self._convert_action = self._discrete_action
            self._act_low, self._act_high = int(act_space.start), int(act_space.start + act_space.n)
        elif isinstance(act_space, gym.spaces.Box):
            self._convert_action = self._box_action
            self._act_low, self._act_high = act_space.low, act_space.high
            if self._cfg.act_scale:
                if not (np.isfinite(act_space.low).all() and np.isfinite(act_space.high).all()):
                    raise EnvError(f"{self!r}: act_scale=True needs a bounded Box action space, got {act_space}")
                act_space = gym.spaces.Box(-1.0, 1.0, act_space.shape, act_space.dtype)
        else:
            self._convert_action = self._generic_action
        self._action_space = act_space
        rng = getattr(self._env, "reward_range", (-np.inf, np.inf))
        self._reward_space = gym.spaces.Box(float(rng[0]), float(rng[1]), (1,), np.float32)

    # ---- BaseEnv interface --------------------------------------------------------------------------------------
    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        """With ``dynamic_seed`` the next reset seeds the gymnasium env once and later episodes continue its RNG
        (every episode differs, reproducibly); else every reset uses ``seed`` (the same episode each time)."""
        self._seed = int(seed)
        self._dynamic_seed = bool(dynamic_seed)
        self._seed_pending = True
        self._action_space.seed(self._seed)

    def reset(self, **kwargs: Any) -> np.ndarray:
        if self._seed is not None and (self._seed_pending or not self._dynamic_seed):
            # Re-seeding gymnasium builds a new Generator; a dynamic seed does it once, not every episode.
            kwargs.setdefault("seed", self._seed)
            self._seed_pending = False
        obs, _ = self._env.reset(**kwargs)
        self._elapsed = 0
        self._episode_return = 0.0
        if self._cast_obs and (type(obs) is not np.ndarray or obs.dtype != _FLOAT32):
            obs = np.asarray(obs, dtype=np.float32)
        return obs

    def step(self, action: Any) -> BaseEnvTimestep:
        if self._elapsed < 0:
            raise EnvError(f"{self!r}: step() called before reset() (or after the episode ended); call reset() first")
        obs, rew, terminated, truncated, info = self._env.step(self._convert_action(action))
        self._elapsed += 1
        if self._elapsed >= self._max_steps:
            truncated = True
        self._episode_return += rew
        info = dict(info)
        info["truncated"] = bool(truncated) and not terminated  # a terminal step is never bootstrapped
        done = bool(terminated or truncated)
        if done:
            info["eval_episode_return"] = float(self._episode_return)
            self._elapsed = -1
        if self._cast_obs and (type(obs) is not np.ndarray or obs.dtype != _FLOAT32):
            obs = np.asarray(obs, dtype=np.float32)
        return BaseEnvTimestep(obs, np.array([rew], dtype=np.float32), done, info)

    def close(self) -> None:
        self._env.close()

    def random_action(self) -> Any:
        """A sample of ``action_space`` (an ``np.int64`` for Discrete), reproducible after ``seed``."""
        return self._action_space.sample()

    def enable_save_replay(self, replay_path: str) -> None:
        """Record a video of every episode into ``replay_path`` (gymnasium ``RecordVideo``; needs moviepy)."""
        from gymnasium.wrappers import RecordVideo

        if getattr(self._env, "render_mode", None) != "rgb_array":
            if not self._owns_env:
                raise EnvError(
                    f"{self!r}: saving a replay needs an env created with render_mode='rgb_array'; "
                    "create the gymnasium env with it, or let the wrapper build it from cfg.env_id"
                )
            self._env.close()
            self._env = self._make_env(render_mode="rgb_array")
        try:
            self._env = RecordVideo(self._env, replay_path, episode_trigger=lambda _: True, disable_logger=True)
        except gym.error.DependencyNotInstalled as e:
            raise EnvError(f"{self!r}: cannot save replays: {e}. Install moviepy (pip install moviepy).") from e

    @property
    def observation_space(self) -> gym.spaces.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.spaces.Space:
        return self._action_space

    @property
    def reward_space(self) -> gym.spaces.Space:
        return self._reward_space

    @property
    def env_action_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The wrapped env's own Box bounds ``(low, high)``, which ``act_scale`` maps [-1, 1] onto (``action_space``
        is then [-1, 1]); None for other action spaces."""
        if isinstance(self._act_low, np.ndarray):
            return self._act_low.copy(), self._act_high.copy()
        return None

    def __repr__(self) -> str:
        spec = getattr(self._env, "spec", None) if hasattr(self, "_env") else None
        name = self._cfg.env_id or (spec.id if spec is not None else type(getattr(self, "_env", None)).__name__)
        return f"{type(self).__name__}({name})"

    # ---- actions ------------------------------------------------------------------------------------------------
    def _discrete_action(self, action: Any) -> int:
        if type(action) is not int:
            action = _as_int(action, self)
        if not self._act_low <= action < self._act_high:
            raise InvalidActionError(
                f"{self!r}: action {action} is outside the action space {self._action_space} "
                f"(valid: {self._act_low} <= action < {self._act_high})"
            )
        return action

    def _box_action(self, action: Any) -> np.ndarray:
        space = self._action_space
        a = np.asarray(action, dtype=space.dtype)
        if a.shape != space.shape:
            assert space.shape is not None  # a Box always has a shape
            if a.size != int(np.prod(space.shape)):
                raise InvalidActionError(
                    f"{self!r}: action of shape {a.shape} does not fit the action space {space} (shape {space.shape})"
                )
            a = a.reshape(space.shape)
        if not np.isfinite(a).all():
            raise InvalidActionError(f"{self!r}: action {a} is not finite (action space {space})")
        if self._cfg.act_scale:
            a = scale_action(a, self._act_low, self._act_high)
        return a

    def _generic_action(self, action: Any) -> Any:
        if not self._action_space.contains(action):
            raise InvalidActionError(f"{self!r}: action {action!r} is outside the action space {self._action_space}")
        return action

    # ---- vectorised settings ------------------------------------------------------------------------------------
    @staticmethod
    def create_collector_env_cfg(cfg: dict) -> list[dict]:
        """One config per collector env (``collector_env_num`` of them); the input is not changed."""
        return [_with(cfg, is_train=True) for _ in range(int(cfg.get("collector_env_num", 1)))]

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        """One config per evaluator env (``evaluator_env_num`` of them); the input is not changed."""
        return [_with(cfg, is_train=False) for _ in range(int(cfg.get("evaluator_env_num", 1)))]


def scale_action(action: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Map an action in [-1, 1] (clipped to it first) affinely onto the Box bounds ``[low, high]``.

    The one place where a continuous policy's actions meet the env's bounds: SAC, DDPG and TD3 act in [-1, 1] and
    ``env.act_scale=True`` calls this on every step (Pendulum: [-1, 1] -> [-2, 2] torque).
    """
    return low + (np.clip(action, -1.0, 1.0) + 1.0) * 0.5 * (high - low)


def _with(cfg: dict, **updates: Any) -> dict:
    out = copy.deepcopy(cfg)
    out.update(updates)
    return out


def _as_int(action: Any, env: BaseEnv) -> int:
    """Turn an integer-like action (numpy scalar, 0-d or shape-(1,) array, tensor) into an ``int``."""
    if isinstance(action, (np.integer, np.bool_)):
        return int(action)
    dtype = getattr(action, "dtype", None)
    if dtype is not None and getattr(action, "ndim", 2) <= 1 and _numel(action) == 1:
        value = action.item()
        if isinstance(value, int):
            return value
    raise InvalidActionError(
        f"{env!r}: a Discrete action must be an integer (int, numpy integer, 0-d or shape-(1,) integer array); "
        f"got {type(action).__name__} {action!r}"
    )


def _numel(x: Any) -> int:
    n = getattr(x, "size", None)
    return n if isinstance(n, int) else x.numel()
