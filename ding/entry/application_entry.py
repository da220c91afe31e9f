"""Evaluate a saved checkpoint with the config's evaluator (``ding -m eval``)."""
from __future__ import annotations

import os
import tempfile
from functools import partial

import torch

from ding.config import compile_config
from ding.engine.run_checkpoint import acting_config, pick_checkpoint, resolve_run, run_mode
from ding.engine.serial_checks import load_input
from ding.engine.serial_run import _eval_returns
from ding.envs import create_env_manager, get_vec_env_setting
from ding.policy import check_policy_fits_env, create_policy
from ding.utils import CheckpointError, ConfigError, join_run_dir, set_pkg_seed, setup_torch_threads
from ding.worker import (
    CKPT_BEST_NAME,
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
    serial part of its config (:mod:`ding.engine.run_checkpoint`).

    With the same seed the evaluation episodes are the ones the training run's evaluator played, so the returned
    value reproduces the return logged when the checkpoint was saved.
    """
    setup_torch_threads()
    if input_cfg is None:  # the run's own config (load_path: its directory or one of its checkpoints)
        if not load_path:
            raise CheckpointError("eval: no config and no checkpoint given; pass -c CONFIG and/or --load-path RUN_DIR "
                                  "or CHECKPOINT")
        run = resolve_run(load_path, None, where="eval")
        main_cfg, create_cfg, source, load_path, mode = run.main, run.create, run.source, run.checkpoint, run.mode
    else:
        main_cfg, create_cfg, source = load_input(input_cfg, source, where="eval")
        mode = run_mode(main_cfg, create_cfg)
        main_cfg, create_cfg = acting_config(main_cfg, create_cfg)  # a parallel config: its serial part
    if mode == "league":
        raise ConfigError(f"eval: {source or 'the config'} is a league run's: its policy plays a two-player game, "
                          "and ding -m eval plays one policy in single-agent envs. Load it with "
                          "ding.load_policy(<run dir or checkpoint>) and play it in your game loop; the run's own "
                          "evaluators (log/battle_eval.csv) measured it against its opponents")
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
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    replay_path = replay_path or cfg.env.get("replay_path")  # the argument wins over the config, as in DI-engine
    if replay_path:
        evaluator_env.enable_save_replay(replay_path)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_policy(cfg.policy, model=model, enable_field=["eval"])
    check_policy_fits_env(policy, evaluator_env, cfg.env.get("type"))
    state = load_checkpoint_file(load_path)
    if "model" not in state:
        raise CheckpointError(f"eval: checkpoint '{load_path}' has no 'model' entry (it holds {sorted(state)}); pass a "
                              "checkpoint written by a ding run (ckpt/ckpt_best.pth.tar or ckpt/iteration_N.pth.tar)")
    policy.eval_mode.load_state_dict({"model": state["model"]})
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
