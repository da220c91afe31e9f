"""Which envpool task runs a ding env config, with which options (the ``env_pool`` manager's translation table).

An env config names its env the way the ``base`` / ``subprocess`` managers build it (``env_id`` plus the env
type's keys); envpool names its tasks its own way. Atari: DI-engine's ``PongNoFrameskip-v4`` and ale-py's
``ALE/Pong-v5`` both run envpool's ``Pong-v5`` with the DeepMind preprocessing of ding's ``atari`` env (the same keys:
``frame_stack``, ``frame_skip``, ``noop_max``, ``fire_reset``, ``max_episode_frames``, and ``is_train``: lives end
episodes and rewards are clipped for training envs only); ``ALE/`` ids keep ale-py's sticky actions (0.25).
MuJoCo: ``Hopper-v3`` and every older version run as ``Hopper-v5``, as ding's ``mujoco`` env does. Any other task
envpool knows (``CartPole-v1``, ...) runs with envpool's defaults.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ding.utils import ConfigError

_NO_FRAMESKIP = re.compile(r"^(?P<game>[A-Za-z0-9]+)NoFrameskip-v4$")
_ALE_V5 = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")
_OLD_VERSION = re.compile(r"^(?P<name>[A-Za-z0-9]+)-v(?P<version>[0-4])$")
# Env keys the translation reads (an env config may hold more: counts, stop value, manager...). Keys of the env
# types' own that envpool has no counterpart for are refused by name (see _refuse).
_UNSUPPORTED = {
    "norm_obs": "use_norm", "norm_reward": "use_norm",  # the mujoco env's running normalisation
}


@dataclass(frozen=True)
class EnvpoolTask:
    """``envpool.make(task_id, env_type='gymnasium', **options)``; ``family`` is 'atari', 'mujoco' or 'other'."""

    task_id: str
    family: str
    options: dict[str, Any] = field(default_factory=dict)


def envpool_task(env_cfg: Mapping[str, Any], known: set[str] | frozenset[str]) -> EnvpoolTask:
    """The envpool task for one env config; ``known`` is ``envpool.list_all_envs()``."""
    env_id = env_cfg.get("env_id")
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError("env.manager.type='env_pool': the env config has no env_id; set env.env_id (e.g. "
                          "'PongNoFrameskip-v4' or 'Hopper-v3')")
    _refuse(env_cfg)
    m = _NO_FRAMESKIP.match(env_id) or _ALE_V5.match(env_id)
    if m is not None and f"{m['game']}-v5" in known:
        return EnvpoolTask(f"{m['game']}-v5", "atari", _atari_options(env_cfg, sticky=env_id.startswith("ALE/")))
    m = _OLD_VERSION.match(env_id)
    task = f"{m['name']}-v5" if m is not None and f"{m['name']}-v5" in known else env_id
    if task not in known:
        raise ConfigError(
            f"env.env_id={env_id!r}: envpool has no such task, so the 'env_pool' manager cannot run it. Use "
            "env_manager type 'subprocess' (or 'base') for this env, or an id envpool lists "
            "(envpool.list_all_envs(): e.g. 'Pong-v5', 'Hopper-v5')"
        )
    family = "mujoco" if task.split("-v")[0] in _GYM_MUJOCO else "other"
    options: dict[str, Any] = {}
    if env_cfg.get("max_episode_steps") is not None:
        options["max_episode_steps"] = int(env_cfg["max_episode_steps"])
    return EnvpoolTask(task, family, options)


# gymnasium's MuJoCo tasks (envpool's "mujoco gym" family)
_GYM_MUJOCO = frozenset({"Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum",
                         "InvertedPendulum", "Pusher", "Reacher", "Swimmer", "Walker2d"})


def _atari_options(env_cfg: Mapping[str, Any], sticky: bool) -> dict[str, Any]:
    train = bool(env_cfg.get("is_train", True))
    frame_skip = int(env_cfg.get("frame_skip", 4))
    options: dict[str, Any] = dict(
        stack_num=int(env_cfg.get("frame_stack", env_cfg.get("stack_num", 4))),
        frame_skip=frame_skip,
        noop_max=int(env_cfg.get("noop_max", 30)),
        use_fire_reset=bool(env_cfg.get("fire_reset", True)),
        episodic_life=train,
        reward_clip=train,
        gray_scale=bool(env_cfg.get("gray_scale", True)),
        img_height=84,
        img_width=84,
        repeat_action_probability=0.25 if sticky else 0.0,
    )
    if env_cfg.get("max_episode_frames") is not None:
        options["max_episode_steps"] = int(env_cfg["max_episode_frames"]) // frame_skip
    return options


def _refuse(env_cfg: Mapping[str, Any]) -> None:
    for key, flag in _UNSUPPORTED.items():
        value = env_cfg.get(key)
        if isinstance(value, Mapping) and value.get(flag):
            raise ConfigError(
                f"env.{key}.{flag}=True: the 'env_pool' manager runs envpool's own envs, which have no running "
                f"normalisation; use env_manager type 'subprocess' (or 'base') for it, or set env.{key}.{flag}=False"
            )
