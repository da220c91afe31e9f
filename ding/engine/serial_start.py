"""The start of a serial run, from its compiled config to the first round: checks, run directory, resume, components.

:func:`start_serial_run` is what every serial door (``serial_pipeline``, ``serial_pipeline_onpolicy``, ``Trainer``,
``ding -m serial``) does after compiling the config. The config walks down from here: the checks of
:mod:`~ding.engine.serial_checks`, the run directory and the resume check of :mod:`~ding.engine.resume`, the components
(:class:`~ding.engine.serial_run.SerialRun`), the loop (:mod:`~ding.engine.serial_loops`) — none of them calls back.

Nothing is written into the run's directory before it is claimed and locked and a resume has been checked; a failed
resume leaves every file of the run as it was (:class:`~ding.engine.resume.AppendUndo`).
"""
from __future__ import annotations

import shutil
from contextlib import ExitStack
from typing import Any

from ding.config import CompiledConfig, announce_exp_dir
from ding.config.ranges import check_batch_fits_buffer
from ding.utils import ResumeError

from .offline_loop import OfflineLoop, OfflineSetup, prepare_offline
from .resume import AppendUndo, Limits, ResumePoint, check_resume, lock_run_dir
from .serial_checks import check_pipeline_fits_policy, share_priority_settings
from .serial_loops import OffPolicyLoop, OnPolicyLoop, TrainLoop
from .serial_run import SerialRun


def start_serial_run(compiled: CompiledConfig, exit_stack: ExitStack, *, limits: Limits, resume: bool,
                     extend: bool, on_policy: bool | None, source: str | None, exact_dir: bool = False,
                     env_setting: list | None = None, model: Any = None,
                     dynamic_seed: bool | None = True, offline: bool = False) -> tuple[SerialRun, TrainLoop]:
    """Check, lock, (resume-check,) build and begin one serial run; return it and its loop, ready for round one.

    ``on_policy`` (None: ``policy.on_policy``) chooses the loop and whether a replay buffer is built. What must be
    released at the end (the directory lock, the components) is pushed onto ``exit_stack``; the caller closes it,
    also when this raises. Call it under the caller's Ctrl-C guard: a stop requested during the start is left for
    the caller to honour. ``offline=True``: the offline loop (:mod:`~ding.engine.offline_loop`) on the data set of
    ``policy.collect.data_path``, no replay buffer; ``max_train_iter`` is also capped by ``learn.train_epoch``.
    """
    cfg = compiled.cfg
    if on_policy is None:
        on_policy = bool(cfg.policy.get("on_policy", False))
    check_pipeline_fits_policy(cfg, on_policy, source)
    setup: OfflineSetup | None = None
    if offline:  # the data set is read (and checked) before anything is written
        setup = prepare_offline(cfg, env_setting)
        env_setting = setup.env_setting
        limits = Limits(min(limits.train_iter, setup.epoch_limit), limits.env_step)
    elif not on_policy:
        share_priority_settings(cfg)  # before the config is saved: total_config.py is the config the run uses
        check_batch_fits_buffer(cfg)
    if extend and not resume:
        raise ResumeError("extend continues a finished run: use it with --resume (resume=True)")
    if extend and not limits.given():
        raise ResumeError("--extend trains a finished run on until --train-iter or --env-step (the stop value no "
                          "longer ends it): give one of them")
    undo: AppendUndo | None = None
    claimed: list[str] = []  # a new run's directory: removed again if the set-up fails (after everything is closed)

    def remove_claimed() -> None:
        for d in claimed:
            shutil.rmtree(d, ignore_errors=True)

    exit_stack.callback(remove_claimed)
    try:
        asked = cfg.exp_name
        run_dir = exit_stack.enter_context(lock_run_dir(cfg.exp_name, resume, exact=exact_dir))
        cfg.exp_name = run_dir.path
        if not resume:
            claimed.append(run_dir.path)
        resume_point: ResumePoint | None = None
        if resume:
            resume_point = check_resume(cfg, model, limits, extend)
            undo = AppendUndo(run_dir.path)
        else:
            compiled.save()
        run = SerialRun(cfg, env_setting, model, dynamic_seed, with_buffer=not on_policy and setup is None)
        exit_stack.callback(run.close)
        loop: TrainLoop = (OfflineLoop(run, setup) if setup is not None else OnPolicyLoop(run) if on_policy
                           else OffPolicyLoop(run))
        run.begin(loop, resume_point)
        if resume_point is None and isinstance(loop, OffPolicyLoop):
            loop.warm_up()
            run.collector.pop_finished_episodes()  # random-action episodes are not the policy's
        if undo is not None:  # restored: from here on the run may rewrite its files
            undo = None
            compiled.save()
        loop.start(limits, stop_at_stop_value=not extend)
        claimed.clear()  # set up: from here on the directory holds a run
        if not resume:  # a resume says where it continues ('ding: resumed from ...'); it claimed nothing
            announce_exp_dir(asked, run_dir.path)
    except BaseException:
        if undo is not None:
            undo.undo()
        raise
    return run, loop
