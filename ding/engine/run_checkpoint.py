"""A run directory or checkpoint of any mode (serial, parallel, league), resolved to a checkpoint and the config to
act with: what ``ding -m eval`` and ``load_policy`` take.

A run directory holds ``total_config.py`` and its checkpoints: ``ckpt/ckpt_best.pth.tar`` and
``ckpt/iteration_N.pth.tar`` (serial and league runs, and a parallel run's learner),
``collector_ckpt/ckpt_best.pth.tar`` (a parallel run's best evaluation), ``ckpt/learnerK/`` (a league's other
learners). A checkpoint file's run is the nearest directory above it that holds a ``total_config.py``.

The config to act with is the serial part of the run's config: its env, env manager and policy. A parallel or league
config also names the roles that trained it (comm learners and collectors, a parallel collector type such as
``zergling``, a commander, a league); acting needs none of them, so they are left out (:func:`acting_config`) and
the usual serial evaluator and sample collector defaults fill their places.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, cast

from easydict import EasyDict

from ding.config import read_config
from ding.config.parallel import PARALLEL_MAIN_EXTRA
from ding.utils import CheckpointError
from ding.worker import CKPT_BEST_NAME, best_checkpoint, list_iteration_checkpoints

TOTAL_CONFIG = "total_config.py"
# create_config parts that acting uses; the others (learner, collector, commander, comm_*, league, ...) trained it
ACTING_PARTS = ("env", "env_manager", "policy")
# main_config keys that acting uses
ACTING_KEYS = ("exp_name", "seed", "env", "policy")
# serial collector and evaluator types: any other (a parallel collector, a battle evaluator) is left out
SERIAL_COLLECTORS = ("sample", "episode")
SERIAL_EVALUATORS = ("interaction", "metric")


@dataclass(frozen=True)
class RunCheckpoint:
    """A checkpoint file and the config of the run that wrote it (``main``, ``create``: acting parts only)."""

    checkpoint: str
    run_dir: str | None
    main: EasyDict
    create: EasyDict
    source: str | None  # the config file read (the run's total_config.py or the one given)
    mode: str  # 'serial', 'parallel' or 'league': what trained it, as its config says
    league_players: dict[str, int] = field(default_factory=dict)  # a league's active players per type
    # a parallel league's fixed opponent of evaluations ('module:Class', its kwargs); None: the env class's own
    eval_opponent: tuple[str, dict] | None = None


def run_dir_of(checkpoint: str, levels: int = 3) -> str | None:
    """The run directory of a checkpoint file: the nearest directory above it holding ``total_config.py``."""
    d = os.path.dirname(os.path.abspath(checkpoint))
    for _ in range(levels):
        d = os.path.dirname(d) if os.path.basename(d) else d
        if os.path.isfile(os.path.join(d, TOTAL_CONFIG)):
            return d
    return None


def pick_checkpoint(run_dir: str, which: str = "best") -> str:
    """The checkpoint of a run directory: ``'best'`` (the best evaluation, serial or parallel; else the newest
    ``iteration_N``) or ``'latest'`` (the newest ``iteration_N``; else the best)."""
    if which not in ("best", "latest"):
        raise ValueError(f"which must be 'best' or 'latest', got {which!r}")
    ckpt_dir = os.path.join(run_dir, "ckpt")
    best = best_checkpoint(run_dir)
    if which == "best" and best:
        return best
    found = list_iteration_checkpoints(ckpt_dir)
    if found:
        return found[-1][1]
    if best:
        return best
    raise CheckpointError(f"no checkpoint in '{run_dir}' (neither ckpt/ nor collector_ckpt/ holds {CKPT_BEST_NAME} "
                          "or iteration_N.pth.tar); give a checkpoint file or the directory of a run that saved one")


def resolve_run(path: str | os.PathLike, config: Any = None, which: str = "best", where: str = "load") -> RunCheckpoint:
    """``path`` (a run directory or a checkpoint file) and ``config`` (a config file, a ``(main, create)`` pair, or
    None: the run's own ``total_config.py``) as a :class:`RunCheckpoint`. ``where`` names the caller in errors."""
    path = os.fspath(path)
    if os.path.isdir(path):
        run_dir: str | None = path
        ckpt = pick_checkpoint(path, which)
    elif os.path.isfile(path):
        run_dir, ckpt = run_dir_of(path), path
    else:
        raise CheckpointError(f"{where}: '{path}' does not exist; give a checkpoint file or a run directory")
    source = None
    if config is None:
        if run_dir is None:
            raise CheckpointError(f"{where}: no {TOTAL_CONFIG} in the directories above '{ckpt}' (the run's own "
                                  "config); give the config that trained it (-c / config=)")
        config = source = os.path.join(run_dir, TOTAL_CONFIG)
    if isinstance(config, (str, os.PathLike)):
        source = os.fspath(config)
        main, create = read_config(source)
    else:
        main, create = (copy.deepcopy(c) for c in config)
    main, create = EasyDict(main), EasyDict(create)
    mode = run_mode(main, create)
    league = ((main.get("policy") or {}).get("other") or {}).get("league") or main.get("league") or {}
    players = {str(k): int(v) for k, v in (league.get("active_players") or {}).items() if v}
    opponent = league_eval_opponent(main)
    main, create = acting_config(main, create)
    return RunCheckpoint(ckpt, run_dir, main, create, source, mode, players, opponent)


def league_eval_opponent(main: Any) -> tuple[str, dict] | None:
    """The fixed opponent a parallel league run evaluated against (the marine collector's ``eval_opponent``,
    ``'module:Class'``, and its ``eval_opponent_kwargs``); None when the config names none (a serial league run:
    its env class's ``eval_opponents``)."""
    collector = ((main.get("policy") or {}).get("collect") or {}).get("collector") or {}
    spec = collector.get("eval_opponent")
    return (str(spec), dict(collector.get("eval_opponent_kwargs") or {})) if spec else None


def run_mode(main: Any, create: Any) -> str:
    """'league' (a league config), 'parallel' (comm roles or a parallel collector) or 'serial'."""
    if "league" in main or "league" in create or "league" in (main.get("policy", {}).get("other") or {}):
        return "league"
    collector = ((main.get("policy") or {}).get("collect") or {}).get("collector") or {}
    types = {collector.get("type"), (create.get("collector") or {}).get("type")} - {None}
    if any(k.startswith("comm_") for k in create) or types - set(SERIAL_COLLECTORS):
        return "parallel"
    return "serial"


def acting_config(main: Any, create: Any) -> tuple[EasyDict, EasyDict]:
    """The serial part of a config of any mode: its env, env manager and policy (see the module docstring)."""
    serial = run_mode(main, create) == "serial"
    main = EasyDict({k: copy.deepcopy(v) for k, v in dict(main).items() if k in ACTING_KEYS})
    create = EasyDict({k: copy.deepcopy(v) for k, v in dict(create).items() if k in ACTING_PARTS})
    if not serial:
        for key in cast(dict, PARALLEL_MAIN_EXTRA["env"]):  # a parallel run's env keys: nothing acting reads
            main.get("env", {}).pop(key, None)
    policy = main.get("policy")
    if policy is not None:
        policy.get("learn", {}).pop("learner", None)  # the learner's own settings (learner_num, hooks, ...)
        other = policy.get("other") or {}
        for key in ("commander", "league"):
            other.pop(key, None)
        if not serial:  # a parallel collector's settings: the serial sample collector's defaults replace them
            (policy.get("collect") or {}).pop("collector", None)
        evaluator = (policy.get("eval") or {}).get("evaluator")
        if evaluator is not None and evaluator.get("type", "interaction") not in SERIAL_EVALUATORS:
            for key in ("type", "cfg_type", "import_names"):
                evaluator.pop(key, None)
    return main, create
