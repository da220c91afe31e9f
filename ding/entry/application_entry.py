"""Evaluate a saved checkpoint with the config's evaluator (``ding -m eval``); a league run's against its fixed
opponents."""
from __future__ import annotations

import copy
import os
import tempfile
from functools import partial
from typing import Any

import numpy as np
import torch
from easydict import EasyDict

from ding.config import compile_config
from ding.engine.run_checkpoint import acting_config, league_eval_opponent, pick_checkpoint, resolve_run, run_mode
from ding.engine.serial_checks import load_input
from ding.engine.serial_run import _eval_returns
from ding.envs import create_env_manager, get_vec_env_setting
from ding.policy import check_policy_fits_env, create_policy
from ding.utils import CheckpointError, ConfigError, join_run_dir, set_pkg_seed, setup_torch_threads
from ding.worker import (
    CKPT_BEST_NAME,
    BattleInteractionSerialEvaluator,
    best_checkpoint,
    create_serial_evaluator,
    list_iteration_checkpoints,
    load_checkpoint_file,
)


def eval(  # noqa: A001  (DI-engine's name)
    input_cfg: str | tuple[dict, dict] | None,
    seed: int = 0,
    env_setting: list | None = None,
    model: torch.nn.Module | None = None,
    load_path: str | None = None,
    replay_path: str | None = None,
    *,
    source: str | None = None,
) -> float:
    """Load ``load_path`` (a ding checkpoint, or a run directory: its best one) into the policy and run one
    evaluation; return the mean return. ``load_path`` None: the config's ``policy.load_path``. ``input_cfg`` None:
    the config of the run ``load_path`` belongs to. A run of any mode (serial, parallel, league) evaluates with the
    serial part of its config (:mod:`ding.engine.run_checkpoint`); a league run's policy plays seat 0 of its
    two-player env against each fixed opponent its own evaluations played (:func:`league_opponents`), and the
    first opponent's mean return is returned.

    With the same seed the evaluation episodes are the ones a serial run's evaluator played, so the returned value
    reproduces the return logged when the checkpoint was saved (a league run's: its first evaluation's; a parallel
    run's collectors seed their own evaluator envs, so its episodes differ).
    """
    setup_torch_threads()
    if input_cfg is None:  # the run's own config (load_path: its directory or one of its checkpoints)
        if not load_path:
            raise CheckpointError("eval: no config and no checkpoint given; pass -c CONFIG and/or --load-path RUN_DIR "
                                  "or CHECKPOINT")
        run = resolve_run(load_path, None, where="eval")
        main_cfg, create_cfg, source, load_path, mode = run.main, run.create, run.source, run.checkpoint, run.mode
        eval_opponent = run.eval_opponent
    else:
        main_cfg, create_cfg, source = load_input(input_cfg, source, where="eval")
        mode = run_mode(main_cfg, create_cfg)
        eval_opponent = league_eval_opponent(main_cfg)
        main_cfg, create_cfg = acting_config(main_cfg, create_cfg)  # a parallel config: its serial part
    if mode == "league":  # the battle evaluator; stop values (maybe one per opponent) end nothing here
        main_cfg, create_cfg = EasyDict(copy.deepcopy(main_cfg)), EasyDict(copy.deepcopy(create_cfg))
        main_cfg.get("env", {}).pop("stop_value", None)
        eval_part = main_cfg.get("policy", {}).get("eval")
        if eval_part and eval_part.get("evaluator"):  # (a parallel run's records the single-agent evaluator's keys)
            eval_part.evaluator = EasyDict({k: v for k, v in eval_part.evaluator.items()
                                            if k in BattleInteractionSerialEvaluator.config and k != "type"})
        create_cfg.evaluator = EasyDict(type="battle_interaction")
    cfg = compile_config(main_cfg, seed=seed, auto=True, create_cfg=create_cfg, save_cfg=False, source=source)
    load_path = load_path or cfg.policy.get("load_path")
    if not load_path:
        raise CheckpointError("eval: no checkpoint given; pass --load-path (or set policy.load_path in the config)")
    if os.path.isdir(load_path):
        load_path = pick_checkpoint(load_path)  # a run directory: its best checkpoint
    if not os.path.isfile(load_path):
        raise CheckpointError(f"eval: checkpoint {load_path!r} does not exist; pass a checkpoint file, e.g. "
                              f"{_example_checkpoint(os.path.dirname(load_path) or '.')}, or a run directory")
    if env_setting is None:
        env_fn, _, evaluator_env_cfg = get_vec_env_setting(cfg.env, collect=False)
    else:
        env_fn, _, evaluator_env_cfg = env_setting
    replay_path = replay_path or cfg.env.get("replay_path")  # the argument wins over the config, as in DI-engine
    if mode == "league":
        return _eval_league(cfg, model, load_path, env_fn, evaluator_env_cfg, eval_opponent, replay_path)
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    if replay_path:
        evaluator_env.enable_save_replay(replay_path)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_policy(cfg.policy, model=model, enable_field=["eval"])
    check_policy_fits_env(policy, evaluator_env, cfg.env.get("type"))
    _load_model(policy, load_path)
    # the evaluator's logs go to a temporary directory: the config's exp_name is usually the training run's own
    # directory, which an evaluation must not write into (the result is the printed line and the return value)
    with tempfile.TemporaryDirectory(prefix="ding_eval_") as logs:
        join_run_dir(logs)
        evaluator = create_serial_evaluator(cfg.policy.eval.evaluator, env=evaluator_env, policy=policy.eval_mode,
                                            exp_name=logs)
        try:
            _, episode_info = evaluator.eval()
        finally:
            evaluator.close()
    ret = _eval_returns(episode_info)
    print(f"[eval] {load_path}: return {ret['eval_return_mean']:.2f} ± {ret['eval_return_std']:.2f}")
    return ret["eval_return_mean"]


def league_opponents(cfg: Any, env_fn: Any, spec: tuple[str, dict] | None) -> dict[str, Any]:
    """The fixed opponents a league run's main player is evaluated against, by name: the parallel league's
    ``eval_opponent`` (``spec``), else the env class's ``eval_opponents(env_cfg, seed)`` (as the serial league run's
    evaluators)."""
    if spec is not None:
        from ding.worker.collector.marine_parallel_collector import load_object  # (the collector's own reader)

        opponent_cls = load_object(spec[0], "policy.collect.collector.eval_opponent")
        return {getattr(opponent_cls, "__name__", "eval_opponent"): opponent_cls(**spec[1])}
    offer = getattr(env_fn, "eval_opponents", None)
    if not callable(offer):
        raise ConfigError(f"eval: env '{cfg.env.get('type')}' of this league run offers no fixed opponents to "
                          "evaluate against (a classmethod eval_opponents(env_cfg, seed), docs/league.md); load "
                          "the policy with ding.load_policy(<run dir or checkpoint>) and play it in your game loop")
    return dict(offer(cfg.env, int(cfg.seed)))


def _load_model(policy: Any, load_path: str) -> None:
    state = load_checkpoint_file(load_path)
    if "model" not in state:
        raise CheckpointError(f"eval: checkpoint '{load_path}' has no 'model' entry (it holds {sorted(state)}); pass a "
                              "checkpoint written by a ding run (ckpt/ckpt_best.pth.tar or ckpt/iteration_N.pth.tar)")
    policy.eval_mode.load_state_dict({"model": state["model"]})


def _eval_league(cfg: Any, model: torch.nn.Module | None, load_path: str, env_fn: Any, env_cfgs: list,
                 spec: tuple[str, dict] | None, replay_path: str | None) -> float:
    """A league run's main player (seat 0, greedy) against each fixed opponent with the battle evaluator, as the
    run's own evaluations; one line per opponent; the first opponent's mean return (the one ckpt_best follows)."""
    opponents = league_opponents(cfg, env_fn, spec)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_policy(cfg.policy, model=model, enable_field=["eval"])
    _load_model(policy, load_path)
    first: float | None = None
    with tempfile.TemporaryDirectory(prefix="ding_eval_") as logs:
        join_run_dir(logs)
        for name, opponent in opponents.items():
            env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs])
            env.seed(cfg.seed, dynamic_seed=False)
            if replay_path:
                env.enable_save_replay(os.path.join(replay_path, name))
            evaluator = create_serial_evaluator(cfg.policy.eval.evaluator, env=env, policy=[policy.eval_mode, opponent],
                                                exp_name=logs, instance_name=name)
            try:
                _, info = evaluator.eval()
            finally:
                evaluator.close()
            p0 = info.players[0]
            returns = np.asarray(p0.returns, dtype=np.float64)
            print(f"[eval] {load_path} against {name}: return {returns.mean():.2f} ± {returns.std():.2f} | W/D/L "
                  f"{p0.wins}/{p0.draws}/{p0.losses} | win rate {p0.win_rate:.0%}", flush=True)
            first = float(returns.mean()) if first is None else first
    assert first is not None, "a league env offers at least one opponent"
    return first


def _example_checkpoint(directory: str) -> str:
    """A checkpoint file to suggest for a directory given as a checkpoint (its ckpt/ subfolder for a run's folder)."""
    for d in (directory, os.path.join(directory, "ckpt")):
        if os.path.isfile(os.path.join(d, CKPT_BEST_NAME)):
            return os.path.join(d, CKPT_BEST_NAME)
        if d != directory and best_checkpoint(directory):
            return str(best_checkpoint(directory))
        found = list_iteration_checkpoints(d)
        if found:
            return found[-1][1]
    if os.path.basename(os.path.normpath(directory)) == "ckpt":
        return os.path.join(directory, CKPT_BEST_NAME)
    return os.path.join(directory, "ckpt", CKPT_BEST_NAME)  # where a run keeps it
