"""gymnasium's MuJoCo v5 envs (Hopper, HalfCheetah, Walker2d, Ant, ...) under DI-engine's env type ``mujoco``.

Needs the simulator: ``pip install -e '.[mujoco]'``. DI-engine's ids (``Hopper-v3``, ``HalfCheetah-v2``, ...) name
versions gymnasium 1.x no longer builds on the ``mujoco`` package; they run as the same env's ``-v5`` with one notice
line. DI-engine's keys are honoured where ding can do what they say, and refused by name where it cannot:

- ``norm_obs.use_norm``: observations normalised by running statistics each env keeps of its own observations
  (clipped to [-3, 3], raw for the first 30 steps), as DI-engine does; ``norm_obs.offline_stats`` (statistics of an
  offline data set) is refused: ding has no offline-RL data sets.
- ``norm_reward.use_norm``: rewards divided by the running std of the env's discounted return
  (``norm_reward.reward_discount``, default 0.99), raw for the first 30 steps while the statistics form (as
  DI-engine) and clipped to [-10, 10] (as SB3's ``VecNormalize(clip_reward=10)``). ``info['eval_episode_return']``
  is always the raw return.
- ``action_clip``: actions clipped to [-1, 1] before the env sees them.
- ``delay_reward_step`` > 1, ``save_replay_gif``, ``action_bins_per_branch`` are refused (see ``_check_unsupported``).
"""
from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers.utils import RunningMeanStd as _VectorMeanStd

from ding.envs import BaseEnvTimestep, DingEnvWrapper
from ding.utils import ENV_REGISTRY, ConfigError, EnvError, RunningMeanStd

logger = logging.getLogger(__name__)

_OLD_ID = re.compile(r"^(?P<name>[A-Za-z0-9]+)-v(?P<version>[0-4])$")
_NOTED: set[str] = set()  # ids whose mapping this process has already announced
_OBS_CLIP = 3.0
_OBS_WARMUP = 30  # steps an env returns raw observations before its statistics are used
_REWARD_WARMUP = 30  # steps an env returns raw rewards before the return's std divides them
_REWARD_CLIP = 10.0  # normalised rewards are clipped to [-10, 10]


def current_env_id(env_id: str) -> str:
    """The gymnasium id ding builds for ``env_id``: a MuJoCo id of a version before 5 maps to ``-v5`` (one notice
    line per id and process); ``-v5`` and any id gymnasium does not know as a MuJoCo env pass unchanged."""
    m = _OLD_ID.match(str(env_id))
    if m is None:
        return env_id
    new = f"{m['name']}-v5"
    spec = gym.envs.registry.get(new)
    if spec is None or "mujoco" not in str(spec.entry_point):
        return env_id
    if env_id not in _NOTED:
        _NOTED.add(env_id)
        logger.warning("mujoco: %s runs as gymnasium's %s (the MuJoCo v5 env; older versions need mujoco-py)",
                       env_id, new)
    return new


@ENV_REGISTRY.register("mujoco")
class MujocoEnv(DingEnvWrapper):
    """One MuJoCo env: float32 observations, Box actions in the env's own bounds ([-1, 1] for Hopper, HalfCheetah,
    Walker2d, Ant), episodes of at most 1,000 steps (truncation is marked ``info['truncated']``)."""

    config = dict(
        DingEnvWrapper.config,
        env_id="Hopper-v5",  # any gymnasium MuJoCo id; DI-engine's -v2/-v3/-v4 ids run as -v5
        # running observation normalisation per env (DI-engine's key); offline_stats is refused
        norm_obs=dict(use_norm=False, offline_stats=dict(use_offline_stats=False)),
        # rewards divided by the running std of the discounted return (DI-engine's key)
        norm_reward=dict(use_norm=False, reward_discount=0.99),
        action_clip=False,  # clip actions to [-1, 1] before stepping
        delay_reward_step=0,  # DI-engine's delayed rewards: only 0 or 1 (no delay) are supported
        save_replay_gif=False,  # DI-engine's gif recording: refused (use enable_save_replay / --replay-path)
        replay_path_gif=None,
        action_bins_per_branch=None,  # DI-engine's discretised actions (BDQ): refused
    )

    def __init__(self, cfg: Mapping | None = None) -> None:
        cfg = copy.deepcopy(dict(cfg or {}))
        if cfg.get("env_id") is not None:
            cfg["env_id"] = current_env_id(cfg["env_id"])
        super().__init__(env=None, cfg=cfg)
        self._check_unsupported()
        norm_obs, norm_reward = self._cfg.norm_obs or {}, self._cfg.norm_reward or {}
        self._norm_obs = bool(norm_obs.get("use_norm", False))
        self._norm_reward = bool(norm_reward.get("use_norm", False))
        self._discount = float(norm_reward.get("reward_discount", 0.99))
        self._action_clip = bool(self._cfg.action_clip)
        self._obs_rms = _VectorMeanStd(shape=self._observation_space.shape) if self._norm_obs else None
        self._obs_count = 0
        self._ret_rms = RunningMeanStd() if self._norm_reward else None
        self._discounted_return = 0.0
        self._raw_return = 0.0
        self._reward_count = 0

    def _make_env(self, render_mode: str | None = None) -> gym.Env:
        try:
            import mujoco
        except ImportError as e:
            raise EnvError(
                f"MujocoEnv({self._cfg.env_id}) needs the MuJoCo simulator, which is not installed ({e}). "
                "Install it with: pip install -e '.[mujoco]'"
            ) from e
        _quiet_known_model_warning(mujoco)
        return super()._make_env(render_mode)

    def _check_unsupported(self) -> None:
        c = self._cfg
        offline = (c.norm_obs or {}).get("offline_stats") or {}
        refused = []
        if offline.get("use_offline_stats"):
            refused.append("env.norm_obs.offline_stats.use_offline_stats=True: statistics of an offline data set "
                           "(DI-engine's TD3-BC); ding has no offline-RL data sets. Set it to False to normalise "
                           "with running statistics")
        if c.delay_reward_step not in (None, 0, 1):
            refused.append(f"env.delay_reward_step={c.delay_reward_step}: delayed rewards are not supported; set it "
                           "to 0")
        if c.save_replay_gif:
            refused.append("env.save_replay_gif=True: gif recording is not supported; record videos with "
                           "`ding -m eval --replay-path DIR` (or env.enable_save_replay)")
        if c.action_bins_per_branch:
            refused.append("env.action_bins_per_branch: discretised MuJoCo actions (DI-engine's BDQ env) are not "
                           "supported; remove the key")
        if refused:
            raise ConfigError("mujoco env: " + "; ".join(refused))

    # ---- BaseEnv interface --------------------------------------------------------------------------------------
    def reset(self, **kwargs: Any) -> np.ndarray:
        obs = super().reset(**kwargs)
        self._discounted_return = 0.0
        self._raw_return = 0.0
        return self._observe(obs)

    def step(self, action: Any) -> BaseEnvTimestep:
        if self._action_clip:
            action = np.clip(np.asarray(action, dtype=np.float32), -1.0, 1.0)
        obs, rew, done, info = super().step(action)
        raw = float(rew[0])
        self._raw_return += raw
        if self._ret_rms is not None:
            self._discounted_return = self._discounted_return * self._discount + raw
            self._ret_rms.update(self._discounted_return)
            self._reward_count += 1
            if self._reward_count > _REWARD_WARMUP:
                rew = np.array([np.clip(raw / self._ret_rms.std, -_REWARD_CLIP, _REWARD_CLIP)], dtype=np.float32)
        if done:
            info["eval_episode_return"] = self._raw_return  # the raw return, whatever the training reward is
        return BaseEnvTimestep(self._observe(obs), rew, done, info)

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        if self._obs_rms is None:
            return obs
        self._obs_count += 1
        self._obs_rms.update(obs[None].astype(np.float64))
        if self._obs_count <= _OBS_WARMUP:
            return obs
        z = (obs - self._obs_rms.mean) / np.sqrt(self._obs_rms.var + 1e-8)
        return np.clip(z, -_OBS_CLIP, _OBS_CLIP).astype(np.float32)

    @staticmethod
    def create_collector_env_cfg(cfg: dict) -> list[dict]:
        return _env_cfgs(cfg, "collector_env_num")

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        return _env_cfgs(cfg, "evaluator_env_num")


def _quiet_known_model_warning(mujoco: Any) -> None:
    """MuJoCo 4 warns, every time a model is compiled, that gymnasium's HalfCheetah/Ant XML uses the deprecated
    ``settotalmass`` attribute (harmless: the model compiles the same). Drop that one message; pass every other
    warning on to the log. Nothing changes where the user installed a warning handler of their own."""
    if not hasattr(mujoco, "set_mju_user_warning") or mujoco.get_mju_user_warning() is not None:
        return

    def handler(message: str) -> None:
        if "'settotalmass' is deprecated" not in message:
            logger.warning("mujoco: %s", message)

    mujoco.set_mju_user_warning(handler)


def _env_cfgs(cfg: Mapping, num_key: str) -> list[dict]:
    """One cfg per env, the id already mapped (so the notice is printed once, here, not by every subprocess)."""
    one = copy.deepcopy(dict(cfg))
    n = int(one.get(num_key, 1) or 1)
    if one.get("env_id") is not None:
        one["env_id"] = current_env_id(one["env_id"])
    return [copy.deepcopy(one) for _ in range(n)]
