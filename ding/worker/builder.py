"""The one component builder: the acting side (env managers, policy, collector, evaluator) and the learning side
(learner, replay buffer) of any process that trains or acts.

Used by the serial run (:class:`ding.engine.serial_run.SerialRun`, both sides over one policy), the zergling collector
of parallel mode (acting side) and the flask_fs comm learner (learning side). It lives on the worker floor because the
parallel roles build their components when the coordinator's start task brings the run's config, inside
``ding/worker``; one builder at their floor keeps serial and parallel set-up identical (seeds, checks, defaults).

Each builder owns what it built until it returns: a failure (or Ctrl-C) half-way closes the part already started and
re-raises. The caller then owns :attr:`Built.closables` (oldest first; close them newest first).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ding.envs import create_env_manager, get_vec_env_setting
from ding.policy import check_policy_fits_env, create_policy
from ding.utils import build_tb_writer, close_all, set_pkg_seed

from .collector.base_serial_collector import create_serial_collector
from .collector.base_serial_evaluator import create_serial_evaluator
from .collector.battle_core import player_spaces
from .learner.base_learner import BaseLearner
from .replay_buffer import create_buffer


@dataclass
class Built:
    """What a builder started; ``closables`` are closed newest first by the caller (see :meth:`close`)."""

    closables: list[Any] = field(default_factory=list)

    def own(self, obj: Any) -> Any:
        self.closables.append(obj)
        return obj

    def close(self) -> None:
        closables, self.closables = self.closables[::-1], []
        close_all(closables)


@dataclass
class ActingSide(Built):
    """Env managers, policy (with the mode views asked for), collector and evaluator of one process."""

    policy: Any = None
    collector_env: Any = None
    evaluator_env: Any = None
    collector: Any = None
    evaluator: Any = None
    tb_logger: Any = None


@dataclass
class LearningSide(Built):
    """The policy's learn mode inside a learner, and the replay buffer when one was asked for."""

    policy: Any = None
    learner: Any = None
    buffer: Any = None


def build_policy(cfg: Any, fields: Sequence[str], *, seed: int, model: Any = None) -> Any:
    """Seed every package RNG with ``seed``, then create ``cfg.policy`` with the mode views ``fields``."""
    set_pkg_seed(int(seed), use_cuda=bool(cfg.policy.get("cuda", False)))
    return create_policy(cfg.policy, model=model, enable_field=list(fields))


def build_acting(cfg: Any, *, seed: int | None = None, dynamic_seed: bool | None = True,
                 env_setting: list | None = None, model: Any = None,
                 policy_fields: Sequence[str] = ("collect", "eval"), collector_cfg: Mapping | None = None,
                 tb_dir: str | None = None, exp_name: str | None = None,
                 instance_name: str | None = None, opponents: Sequence[Any] | None = None,
                 eval_opponents: Sequence[Any] | None = None, evaluator_cfg: Mapping | None = None,
                 tb_logger: Any = None) -> ActingSide:
    """The acting side of a run from its compiled main config ``cfg``.

    The collector's envs are seeded with ``seed`` (default ``cfg.seed``; ``dynamic_seed`` as in DI-engine), the
    evaluator's always with ``cfg.seed`` (every evaluation plays the same episodes), then the package RNGs with
    ``seed`` and the policy is created (``policy_fields``: the mode views to enable) and checked against the env's
    spaces. ``env_setting`` replaces ``get_vec_env_setting(cfg.env)``; ``collector_cfg`` replaces
    ``cfg.policy.collect.collector`` (without a ``type``, the policy's ``default_collector_type`` or 'sample');
    ``tb_dir``: a TensorBoard writer there, shared by the collector and evaluator (and returned for the learner);
    ``tb_logger``: a writer the caller owns (e.g. a run's :class:`~ding.utils.tracking.TrackingWriter`), used instead
    of one at ``tb_dir``; ``instance_name`` names the collector's logs (the evaluator's: ``<instance_name>_evaluator``).

    Battles (two-player envs, docs/league.md): with ``opponents`` the collector gets the policy list
    ``[policy.collect_mode, *opponents]`` and the evaluator ``[policy.eval_mode, *eval_opponents]``, and the policy
    is checked against player 0's spaces. ``evaluator_cfg`` replaces ``cfg.policy.eval.evaluator``.
    """
    seed = int(cfg.seed if seed is None else seed)
    exp_name = str(exp_name or cfg.exp_name)
    side = ActingSide()
    try:
        env_fn, collector_env_cfg, evaluator_env_cfg = (get_vec_env_setting(cfg.env) if env_setting is None
                                                        else env_setting)
        side.collector_env = side.own(
            create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg or []]))
        side.evaluator_env = side.own(
            create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg or []]))
        side.collector_env.seed(seed, dynamic_seed=dynamic_seed)
        side.evaluator_env.seed(int(cfg.seed), dynamic_seed=False)
        side.policy = build_policy(cfg, policy_fields, seed=seed, model=model)
        battle = opponents is not None
        check_policy_fits_env(side.policy, player_spaces(side.collector_env) if battle else side.collector_env,
                              cfg.env.get("type"))
        if tb_logger is not None:
            side.tb_logger = tb_logger
        elif tb_dir is not None:
            side.tb_logger = side.own(build_tb_writer(tb_dir))
        if collector_cfg is None:
            collector_cfg = cfg.policy.collect.collector
        elif not collector_cfg.get("type"):
            default = getattr(type(side.policy), "default_collector_type", None) or "sample"
            collector_cfg = {**collector_cfg, "type": default}
        names: dict[str, Any] = {} if instance_name is None else {"instance_name": instance_name}
        collect_policy = [side.policy.collect_mode, *(opponents or [])] if battle else side.policy.collect_mode
        side.collector = side.own(create_serial_collector(
            collector_cfg, env=side.collector_env, policy=collect_policy, tb_logger=side.tb_logger,
            exp_name=exp_name, **names))
        if instance_name is not None:
            names = {"instance_name": f"{instance_name}_evaluator"}
        eval_policy = [side.policy.eval_mode, *(eval_opponents or [])] if battle else side.policy.eval_mode
        side.evaluator = side.own(create_serial_evaluator(
            cfg.policy.eval.evaluator if evaluator_cfg is None else evaluator_cfg, env=side.evaluator_env,
            policy=eval_policy,
            tb_logger=side.tb_logger, exp_name=exp_name, **names))
    except BaseException:  # a failed (or interrupted) set-up closes what it already started, then re-raises
        side.close()
        raise
    return side


def build_learning(cfg: Any, *, policy: Any = None, seed: int | None = None, model: Any = None,
                   learner_cfg: Mapping | None = None, tb_logger: Any = None, with_buffer: bool = False,
                   exp_name: str | None = None, **learner_kwargs: Any) -> LearningSide:
    """The learning side of a run from its compiled main config ``cfg``: a :class:`BaseLearner` over the learn mode
    of ``policy`` (None: a policy with the learn mode only, created after seeding the package RNGs with ``seed``,
    default ``cfg.seed``), and with ``with_buffer`` the replay buffer of ``cfg.policy.other.replay_buffer`` (its
    python log goes to ``<exp>/log/buffer/buffer_logger.txt`` while it is open).

    ``learner_cfg`` replaces ``cfg.policy.learn.learner``; ``learner_kwargs`` go to the learner (``instance_name``,
    ``data_source``, ``ckpt_dir``, ``log_dir``).
    """
    exp_name = str(exp_name or cfg.exp_name)
    side = LearningSide()
    try:
        if policy is None:
            policy = build_policy(cfg, ["learn"], seed=int(cfg.get("seed", 0) if seed is None else seed), model=model)
        side.policy = policy
        side.learner = side.own(BaseLearner(cfg.policy.learn.learner if learner_cfg is None else learner_cfg,
                                            policy.learn_mode, tb_logger, exp_name=exp_name, **learner_kwargs))
        if with_buffer:
            side.buffer = side.own(create_buffer(cfg.policy.other.replay_buffer, tb_logger=tb_logger,
                                                 exp_name=exp_name))
            # the buffer logs through python logging; keep a text log of it beside the other workers'
            side.own(FileLog("ding.replay_buffer.buffer", os.path.join(exp_name, "log", "buffer",
                                                                       "buffer_logger.txt")))
    except BaseException:
        side.close()
        raise
    return side


class FileLog:
    """A file handler on a named logger for the duration of a run."""

    def __init__(self, name: str, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._logger = logging.getLogger(name)
        self._handler = logging.FileHandler(path)
        self._handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s"))
        self._logger.addHandler(self._handler)
        if self._logger.level == logging.NOTSET or self._logger.level > logging.INFO:
            self._logger.setLevel(logging.INFO)

    def close(self) -> None:
        self._logger.removeHandler(self._handler)
        self._handler.close()
