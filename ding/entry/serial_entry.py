"""``serial_pipeline``: the off-policy training loop (collect → push → sample → train), one process.

The set-up both serial pipelines share (config, run directory and lock, resume check, components, Ctrl-C, undo of a
failed resume) is :func:`run_serial`; the components come from :class:`~ding.entry.serial_run.SerialRun` and the loop
from :mod:`ding.entry.serial_loops`. ``serial_pipeline_onpolicy`` is in :mod:`ding.entry.serial_entry_onpolicy`.
"""
from __future__ import annotations

import copy
import os
from typing import Any

import torch

from ding.config import compile_run_config, read_config
from ding.config.ranges import at_least
from ding.utils import ConfigError, ResumeError, setup_torch_threads

from .resume import AppendUndo, Limits, RunState, check_resume, lock_run_dir
from .serial_loops import OffPolicyLoop, OnPolicyLoop
from .serial_run import SerialRun
from .training_view import GracefulStop


def _load_input(input_cfg: Any, source: str | None) -> tuple[dict, dict, str | None]:
    if isinstance(input_cfg, (str, os.PathLike)):
        main_cfg, create_cfg = read_config(os.fspath(input_cfg))
        return main_cfg, create_cfg, os.fspath(input_cfg)
    if not (isinstance(input_cfg, (tuple, list)) and len(input_cfg) == 2):
        raise TypeError(
            "serial_pipeline: input_cfg must be a config file path or a (main_config, create_config) tuple, "
            f"got {type(input_cfg).__name__}"
        )
    main_cfg, create_cfg = input_cfg
    return copy.deepcopy(main_cfg), copy.deepcopy(create_cfg), source


def serial_pipeline(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: list | None = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = int(1e10),
    max_env_step: int | None = int(1e10),
    dynamic_seed: bool | None = True,
    *,
    resume: bool | None = None,
    extend: bool = False,
    source: str | None = None,
) -> Any:
    """Train an off-policy policy until the evaluator reaches ``stop_value`` or a limit; return the policy.

    ``input_cfg`` is a config file path or ``(main_config, create_config)``. ``resume=True`` (or
    ``policy.learn.resume_training=True``) continues the run in ``./<exp_name>/`` from its latest checkpoint, exactly.
    A finished run is not resumed unless ``extend=True``: it then trains on to ``max_train_iter`` / ``max_env_step``
    and the stop value no longer ends it.
    """
    return run_serial(input_cfg, seed, env_setting, model, max_train_iter, max_env_step, dynamic_seed,
                      resume=resume, extend=extend, source=source, on_policy=False)


def run_serial(
    input_cfg: str | tuple[dict, dict],
    seed: int,
    env_setting: list | None,
    model: torch.nn.Module | None,
    max_train_iter: int | None,
    max_env_step: int | None,
    dynamic_seed: bool | None,
    *,
    resume: bool | None,
    extend: bool,
    source: str | None,
    on_policy: bool,
) -> Any:
    """The set-up and run both serial pipelines share; ``on_policy`` chooses the loop (and whether a replay buffer
    is built). Returns the trained policy."""
    setup_torch_threads()
    _check_limits(max_train_iter=max_train_iter, max_env_step=max_env_step)
    main_cfg, create_cfg, source = _load_input(input_cfg, source)
    if resume is None:
        resume = bool(main_cfg.get("policy", {}).get("learn", {}).get("resume_training", False))
    compiled = compile_run_config(main_cfg, create_cfg, seed, source=source)
    cfg = compiled.cfg
    _check_pipeline_fits_policy(cfg, on_policy, source)
    if not on_policy:
        _share_priority_settings(cfg)  # before the config is saved: total_config.py is the config the run uses
        _check_batch_fits_buffer(cfg)
    max_train_iter = int(1e10) if max_train_iter is None else max_train_iter
    max_env_step = int(1e10) if max_env_step is None else max_env_step
    limits = Limits(max_train_iter, max_env_step)
    if extend and not resume:
        raise ResumeError("extend continues a finished run: use it with --resume (resume=True)")
    if extend and not limits.given():
        raise ResumeError("--extend trains a finished run on until --train-iter or --env-step (the stop value no "
                          "longer ends it): give one of them")

    # Nothing is written into the run's directory before it is ours (claimed and locked) and a resume has been
    # checked: a refused or failed start leaves every file of the run as it was.
    with lock_run_dir(cfg.exp_name, resume) as run_dir:
        cfg.exp_name = run_dir.path
        if resume:
            resume_point = check_resume(cfg, model, limits, extend)
            undo: AppendUndo | None = AppendUndo(run_dir.path)
        else:
            resume_point, undo = None, None
            compiled.save()
        try:
            run = SerialRun(cfg, env_setting, model, dynamic_seed, with_buffer=not on_policy)
            try:
                loop = OnPolicyLoop(run) if on_policy else OffPolicyLoop(run)
                with GracefulStop() as stop:
                    run.begin(RunState(run, loop), resume_point)
                    if resume_point is None and not on_policy:
                        loop.warm_up()
                    if undo is not None:  # restored: from here on the run may rewrite its files
                        undo = None
                        compiled.save()
                    loop.train(limits, stop, stop_at_stop_value=not extend)
            finally:
                run.close()
        except BaseException:
            if undo is not None:
                undo.undo()
            raise
    return run.policy


def _check_limits(**limits: int | None) -> None:
    """``max_train_iter`` / ``max_env_step`` (``--train-iter`` / ``--env-step``) are counts: ints >= 0 (None: none)."""
    flags = {"max_train_iter": "--train-iter", "max_env_step": "--env-step"}
    problems = [f"{name} ({flags[name]}): {why}" for name, value in limits.items()
                if value is not None and (why := at_least(0, integer=True).problem(value))]
    if problems:
        raise ConfigError("\n".join(problems))


def _check_batch_fits_buffer(cfg: Any) -> None:
    """A batch the buffer can never hold would leave the loop collecting forever without one update."""
    buffer_cfg = cfg.policy.other.get("replay_buffer") or {}
    size, batch = buffer_cfg.get("replay_buffer_size"), cfg.policy.learn.get("batch_size")
    ratio = (buffer_cfg.get("thruput_controller") or {}).get("sample_min_limit_ratio", 1)
    if size is None or batch is None or batch * ratio <= size:
        return
    need = f"{batch} stored items" if ratio == 1 else f"{batch * ratio:g} stored items (sample_min_limit_ratio={ratio})"
    raise ConfigError(
        f"policy.learn.batch_size: a batch of {batch} needs {need}, but policy.other.replay_buffer.replay_buffer_size "
        f"is {size}, so training would never start; raise replay_buffer_size or lower batch_size"
    )


def _share_priority_settings(cfg: Any) -> None:
    """The policy decides whether priorities exist (its learner returns them); a prioritized buffer follows it, and
    a buffer without priorities is an error rather than silently sampling uniformly."""
    buffer_cfg = cfg.policy.other.get("replay_buffer")
    wanted = [k for k in ("priority", "priority_IS_weight") if cfg.policy.get(k)]
    if wanted and buffer_cfg is not None and "priority" not in buffer_cfg:
        raise ConfigError(
            f"policy.{wanted[0]}=True, but the {buffer_cfg.get('type')!r} replay buffer does not sample by priority; "
            "use create_config.replay_buffer.type='advanced', or set policy.priority and policy.priority_IS_weight "
            "to False"
        )
    if buffer_cfg is not None and "priority" in buffer_cfg:
        buffer_cfg.priority = bool(cfg.policy.get("priority", False))
        if "priority_IS_weight" in buffer_cfg:
            buffer_cfg.priority_IS_weight = bool(cfg.policy.get("priority_IS_weight", False))


def _check_pipeline_fits_policy(cfg: Any, on_policy: bool, source: str | None) -> None:
    """An on-policy algorithm needs the on-policy loop (no replay buffer) and an off-policy one the other."""
    where = f" (in {source})" if source else ""
    if on_policy and cfg.policy.get("random_collect_size", 0):
        raise ConfigError(
            f"policy.random_collect_size: {cfg.policy.random_collect_size}{where}, but an on-policy run has no "
            "replay buffer to warm up (it trains on what its own policy collects); remove it or set it to 0"
        )
    if bool(cfg.policy.get("on_policy", False)) == on_policy:
        return
    name = cfg.policy.get("type")
    if on_policy:
        raise ConfigError(
            f"policy.on_policy: policy {name!r} is off-policy (policy.on_policy=False{where}): it trains from a replay "
            "buffer; run it with serial_pipeline (ding -m serial), or set policy.on_policy=True to train it on fresh "
            "data only"
        )
    raise ConfigError(
        f"policy.on_policy: policy {name!r} is on-policy (policy.on_policy=True{where}): it trains on freshly "
        "collected data without a replay buffer; run it with serial_pipeline_onpolicy (ding -m serial_onpolicy)"
    )
