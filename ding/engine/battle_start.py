"""A serial league run from its config to its end: ``serial_pipeline_battle`` / ``ding -m serial_battle``.

The same steps as :func:`~ding.engine.serial_start.start_serial_run`: the config is compiled with the battle workers
as defaults (``episode_1v1`` collector, ``battle_interaction`` evaluator), the run's directory claimed (or, for a
resume, checked and chosen) and locked before anything is written, the components built
(:class:`~ding.engine.battle_run.BattleRun`), the checkpoint restored, then :class:`~ding.engine.battle_loop.BattleLoop`
runs round after round until every evaluator reaches its stop value, a limit, or Ctrl-C (a checkpoint, then
:class:`~ding.engine.training_view.TrainingInterrupted`).
"""
from __future__ import annotations

import copy
import shutil
from contextlib import ExitStack
from typing import Any

from ding.config import announce_exp_dir, compile_run_config
from ding.utils import ConfigError

from .battle_loop import BattleLoop
from .battle_run import BattleRun
from .resume import AppendUndo, Limits, ResumePoint, check_resume, lock_run_dir
from .training_view import GracefulStop

# DI-engine's league demo configs (``dizoo/league_demo/*_ppo_config.py``) carry no create config: its demo scripts
# build ``GameEnv(env_type)`` and PPO themselves. A config with no env type whose ``env.env_type`` is one of the
# demo's games gets what those scripts imply (docs/league.md, "DI-engine's demo configs").
LEAGUE_DEMO_ENV_TYPES = ("prisoner_dilemma", "zero_sum")
LEAGUE_DEMO_CREATE = dict(env=dict(type="league_demo_game"),  # registered by the env zoo's ding.plugins entry
                          policy=dict(type="ppo"))


def league_demo_defaults(main_cfg: Any, create_cfg: dict) -> list[str]:
    """Fill ``create_cfg`` (in place) for a DI-engine league demo config that names no env type: the league demo's
    ``GameEnv`` and, when no policy type is given, PPO. Returns what was filled (empty: nothing)."""
    env_section = dict(create_cfg.get("env") or {})
    game = (main_cfg.get("env") or {}).get("env_type")
    if env_section.get("type") or (main_cfg.get("env") or {}).get("type") or game not in LEAGUE_DEMO_ENV_TYPES:
        return []
    filled = []
    for part, default in LEAGUE_DEMO_CREATE.items():
        section = dict(create_cfg.get(part) or {})
        if not section.get("type") and not (main_cfg.get(part) or {}).get("type"):
            section.update(copy.deepcopy(default))
            create_cfg[part] = section
            filled.append(f"{part} '{default['type']}'")
    return filled


def battle_create_config(create_cfg: Any, main_cfg: Any = None) -> dict:
    """``create_cfg`` with the battle workers as the collector and evaluator when it names none, and, for a DI-engine
    league demo config without an env type, the demo's game and PPO (one notice line says so)."""
    create_cfg = copy.deepcopy(dict(create_cfg or {}))
    filled = league_demo_defaults(main_cfg or {}, create_cfg)
    if filled:
        print(f"ding: no env type in the config and env.env_type is {main_cfg['env']['env_type']!r} (DI-engine's "
              f"league demo): using {' and '.join(filled)} as DI-engine's demo script does", flush=True)
    for part, default in (("collector", "episode_1v1"), ("evaluator", "battle_interaction")):
        section = dict(create_cfg.get(part) or {})
        section.setdefault("type", default)
        create_cfg[part] = section
    return create_cfg


def run_battle(main_cfg: Any, create_cfg: Any, seed: int, *, limits: Limits, resume: bool, model: Any = None,
               dynamic_seed: bool | None = True, source: str | None = None, stop: GracefulStop) -> BattleRun:
    """Compile, lock, (resume-check,) build and run one serial league run to its end; return it (closed)."""
    main_cfg = copy.deepcopy(main_cfg)
    env_cfg = main_cfg.get("env") or {}
    stop_values = env_cfg.get("stop_value")
    if isinstance(stop_values, (list, tuple)):  # one per evaluator (DI-engine's demo configs): checked by the run
        env_cfg.pop("stop_value")
    compiled = compile_run_config(main_cfg, battle_create_config(create_cfg, main_cfg), seed, source=source)
    cfg = compiled.cfg
    if isinstance(stop_values, (list, tuple)):
        cfg.env.stop_value = list(stop_values)
    if not cfg.policy.get("on_policy", False):
        raise ConfigError(f"serial_pipeline_battle: policy '{cfg.policy.get('type')}' is off-policy; the battle "
                          "pipeline trains each player on the games it just played (an on-policy policy: ppo)")
    if cfg.policy.collect.get("n_episode") is None:
        raise ConfigError("policy.collect.n_episode: serial_pipeline_battle plays whole games per job; set the "
                          "number of games each player plays per round")
    with ExitStack() as exit_stack:
        claimed: list[str] = []

        def remove_claimed() -> None:  # a new run's directory, when its set-up failed
            for d in claimed:
                shutil.rmtree(d, ignore_errors=True)

        exit_stack.callback(remove_claimed)
        undo: AppendUndo | None = None
        try:
            asked = cfg.exp_name
            run_dir = exit_stack.enter_context(lock_run_dir(cfg.exp_name, resume))
            cfg.exp_name = run_dir.path
            resume_point: ResumePoint | None = None
            if resume:
                resume_point = check_resume(cfg, model, limits)
                undo = AppendUndo(run_dir.path)
            else:
                claimed.append(run_dir.path)
                compiled.save()
            run = BattleRun(cfg, model, dynamic_seed)
            exit_stack.callback(run.close)
            loop = BattleLoop(run)
            run.begin(loop, resume_point)
            if undo is not None:
                undo = None
                compiled.save()
            loop.start(limits)
            claimed.clear()
            if not resume:  # a resume says where it continues ('ding: resumed from ...'); it claimed nothing
                announce_exp_dir(asked, run_dir.path)
        except BaseException:
            if undo is not None:
                undo.undo()
            raise
        ended, stop_flag = None, False
        while ended is None:
            out = loop.round(stop)
            ended, stop_flag = out.ended, out.stop_flag
            if ended is None and stop.requested:
                ended = "interrupted"
        if loop.view is not None:
            loop.view.close()
        run.finish(ended, stop_flag, stop)
    return run
