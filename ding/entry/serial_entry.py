"""``serial_pipeline``: the off-policy training loop (collect → push → sample → train), one process."""
from __future__ import annotations

import copy
import json
import os
import time
from functools import partial
from typing import Any

import torch

from ding.config import compile_run_config, read_config
from ding.config.ranges import at_least
from ding.envs import create_env_manager, get_vec_env_setting
from ding.policy import check_policy_fits_env, create_policy, get_random_policy
from ding.utils import ConfigError, ResumeError, atomic_write_text, build_tb_writer, set_pkg_seed, setup_torch_threads
from ding.worker import (
    BaseLearner,
    BaseSerialCommander,
    create_buffer,
    create_serial_collector,
    create_serial_evaluator,
    iteration_ckpt_name,
)

from .resume import AppendUndo, Limits, ResumePoint, RunState, check_resume, lock_run_dir
from .training_view import EvalCSV, GracefulStop, ProgressView


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
    setup_torch_threads()
    _check_limits(max_train_iter=max_train_iter, max_env_step=max_env_step)
    main_cfg, create_cfg, source = _load_input(input_cfg, source)
    if resume is None:
        resume = bool(main_cfg.get("policy", {}).get("learn", {}).get("resume_training", False))
    compiled = compile_run_config(main_cfg, create_cfg, seed, source=source)
    cfg = compiled.cfg
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
            run = _SerialRun(cfg, env_setting, model, dynamic_seed)
            try:
                with GracefulStop() as stop:
                    run.begin(resume_point)
                    if undo is not None:  # restored: from here on the run may rewrite its files
                        undo = None
                        compiled.save()
                    run.train(limits, stop, stop_at_stop_value=not extend)
            finally:
                run.close()
        except BaseException:
            if undo is not None:
                undo.undo()
            raise
    return run.policy


class _SerialRun:
    """The components of one serial off-policy run and its loop; `state` (RunState) makes it resumable."""

    def __init__(self, cfg: Any, env_setting: list | None, model: torch.nn.Module | None,
                 dynamic_seed: bool | None) -> None:
        self.cfg = cfg
        self._closables: list[Any] = []
        self._resumed = False
        self._start_time = time.time()
        try:
            self._build(env_setting, model, dynamic_seed)
        except BaseException:  # a failed (or interrupted) set-up closes what it already started, then re-raises
            self.close()
            raise

    def _build(self, env_setting: list | None, model: torch.nn.Module | None, dynamic_seed: bool | None) -> None:
        cfg = self.cfg
        if env_setting is None:
            env_fn, collector_env_cfg, evaluator_env_cfg = get_vec_env_setting(cfg.env)
        else:
            env_fn, collector_env_cfg, evaluator_env_cfg = env_setting
        self.collector_env = self._own(
            create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg]))
        self.evaluator_env = self._own(
            create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg]))
        self.collector_env.seed(cfg.seed, dynamic_seed=dynamic_seed)
        self.evaluator_env.seed(cfg.seed, dynamic_seed=False)
        set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)

        self.policy = create_policy(cfg.policy, model=model, enable_field=["learn", "collect", "eval", "command"])
        check_policy_fits_env(self.policy, self.collector_env, cfg.env.get("type"))
        self.tb_logger = build_tb_writer(os.path.join(cfg.exp_name, "log", "serial"))
        self._closables.append(self.tb_logger)
        p = self.policy
        self.learner = self._own(
            BaseLearner(cfg.policy.learn.learner, p.learn_mode, self.tb_logger, exp_name=cfg.exp_name))
        self.collector = self._own(create_serial_collector(
            cfg.policy.collect.collector, env=self.collector_env, policy=p.collect_mode,
            tb_logger=self.tb_logger, exp_name=cfg.exp_name))
        self.evaluator = self._own(create_serial_evaluator(
            cfg.policy.eval.evaluator, env=self.evaluator_env, policy=p.eval_mode,
            tb_logger=self.tb_logger, exp_name=cfg.exp_name))
        self.buffer = self._own(create_buffer(cfg.policy.other.replay_buffer, tb_logger=self.tb_logger,
                                              exp_name=cfg.exp_name))
        # the buffer logs through python logging; keep a text log of it beside the other workers'
        self._own(_FileLog("ding.replay_buffer.buffer", os.path.join(cfg.exp_name, "log", "buffer",
                                                                     "buffer_logger.txt")))
        self.commander = BaseSerialCommander(cfg.policy.other.commander, self.learner, self.collector,
                                             self.evaluator, self.buffer, p.command_mode)
        self.state = RunState(self)
        self.eval_csv = EvalCSV(os.path.join(cfg.exp_name, "log", "eval.csv"))
        self.last_eval: dict[str, Any] = {}

    def _own(self, obj: Any) -> Any:
        self._closables.append(obj)
        return obj

    # ---------------------------------------------------------------- the loop
    def begin(self, resume: ResumePoint | None) -> None:
        """``before_run`` hooks, then the resume's restore, or the warm-up collect of a new run."""
        self._start_time = time.time()
        self.learner.call_hook("before_run")
        self.state.next_update = self.cfg.policy.learn.update_per_collect  # a new run starts at the top of the loop
        if resume is not None:
            self.state.load(resume)
            self._start_time -= self.state.loaded_elapsed
            self._resumed = True
        elif self.cfg.policy.get("random_collect_size", 0) > 0:
            self._random_collect(self.cfg.policy.random_collect_size)

    def train(self, limits: Limits, stop: GracefulStop, stop_at_stop_value: bool = True) -> None:
        """SPEC §6: {commander → eval? → collect → push → update_per_collect × (sample → train → priorities)}.

        Call :meth:`begin` first. The loop is written with the updates first so a resumed run can re-enter it in the
        middle of a collect cycle (``RunState.next_update``). Stop requests (Ctrl-C/SIGTERM, a hook) are honoured at
        safe points only: after an update or after a collect, where the checkpoint describes a consistent state.
        """
        cfg, learner, collector, buffer, state = self.cfg, self.learner, self.collector, self.buffer, self.state
        update_per_collect = cfg.policy.learn.update_per_collect
        batch_size = cfg.policy.learn.batch_size
        use_priority = bool(cfg.policy.get("priority", False))
        max_train_iter, max_env_step = limits.train_iter, limits.env_step
        view = ProgressView(max_env_step=max_env_step, max_train_iter=max_train_iter,
                            stop_value=cfg.env.get("stop_value"))
        if self._resumed:
            self.eval_csv.truncate_after(learner.train_iter)

        stop_flag = False
        ended = "limit"
        while True:
            for i in range(state.next_update, update_per_collect):
                # warm-up: too few samples for a batch yet (quietly); any other refusal is logged by the buffer
                train_data = buffer.sample(batch_size, learner.train_iter) if buffer.count() >= batch_size else None
                if train_data is None:
                    state.next_update = update_per_collect
                    break
                state.begin_update(i)
                learner.train(train_data, collector.envstep)
                if use_priority:
                    buffer.update(learner.priority_info)
                state.end_update(i)
                if stop.requested or learner.stop_requested:
                    break
            view.update(collector.envstep, learner.train_iter)
            if stop.requested or learner.stop_requested:
                ended = "interrupted" if stop.requested else "hook"
                break
            if collector.envstep >= max_env_step or learner.train_iter >= max_train_iter:
                break
            collect_kwargs = self.commander.step()
            if self.evaluator.should_eval(learner.train_iter):
                stop_flag, episode_info = self.evaluator.eval(learner.save_checkpoint, learner.train_iter,
                                                              collector.envstep)
                self._record_eval(episode_info, view)
                stop_flag = stop_flag and stop_at_stop_value
                if stop_flag:
                    ended = "stop_value"
                    break
            new_data = collector.collect(train_iter=learner.train_iter, policy_kwargs=collect_kwargs)
            buffer.push(new_data, cur_collector_envstep=collector.envstep)
            state.next_update = 0
            if stop.requested:
                ended = "interrupted"
                break
        # the end-of-run checkpoint records how the run ended, so a later --resume can tell a finished run
        state.ended = None if ended == "interrupted" else {"reason": ended, **self.last_eval}
        learner.call_hook("after_run")
        if stop.requested and learner.ckpt_name != iteration_ckpt_name(learner.train_iter):
            state.save_now()  # Ctrl-C always leaves a checkpoint to resume from, whatever the hooks do
        view.close()
        self._write_result(stop_flag, self.elapsed(), interrupted=stop.requested)
        stop.reraise(self.cfg.exp_name)

    def elapsed(self) -> float:
        """Training time of the run so far, in seconds, over all its sessions (a resume continues the clock)."""
        return time.time() - self._start_time

    def _random_collect(self, size: int) -> None:
        random_policy = get_random_policy(self.policy.collect_mode, self.collector_env.action_space)
        self.collector.reset_policy(random_policy)
        data = self.collector.collect(n_sample=size, train_iter=0, random_collect=True)
        self.buffer.push(data, cur_collector_envstep=self.collector.envstep)
        self.collector.reset_policy(self.policy.collect_mode)

    def _record_eval(self, episode_info: Any, view: ProgressView) -> None:
        ret = _eval_returns(episode_info)
        self.last_eval = {"train_iter": self.learner.train_iter, "env_step": self.collector.envstep, **ret}
        self.eval_csv.append(self.learner.train_iter, self.collector.envstep, ret["eval_return_mean"],
                             ret["eval_return_std"], self.elapsed())
        # every buffer type reports its fill level (the prioritized one also logs sample statistics itself)
        self.tb_logger.add_scalar("buffer_iter/count", self.buffer.count(), self.learner.train_iter)
        pushed = getattr(self.buffer, "push_count", None)
        if isinstance(pushed, int):
            self.tb_logger.add_scalar("buffer_iter/push_count", pushed, self.learner.train_iter)
        view.eval(ret["eval_return_mean"])

    def _write_result(self, stop_flag: bool, wall: float, interrupted: bool) -> None:
        result = {
            "exp_name": self.cfg.exp_name, "stop_flag": bool(stop_flag), "interrupted": interrupted,
            "stop_value": self.cfg.env.get("stop_value"), "env_step": int(self.collector.envstep),
            "train_iter": int(self.learner.train_iter), "eval_return": self.last_eval.get("eval_return_mean"),
            "eval_return_std": self.last_eval.get("eval_return_std"),
            "best_eval_return": _best_return(self.evaluator), "wall_time_s": round(wall, 3), "seed": self.cfg.seed,
        }
        atomic_write_text(os.path.join(self.cfg.exp_name, "result"), json.dumps(result, indent=2) + "\n")
        why = ("reached the stop value" if stop_flag else "interrupted" if interrupted
               else "stopped at a limit or by a hook")
        saved = "checkpoint and results" if interrupted else "results"
        print(f"ding: {why} after {result['env_step']:,} env steps and {result['train_iter']:,} iterations "
              f"({wall:.1f} s); {saved} in ./{self.cfg.exp_name}/", flush=True)

    def close(self) -> None:
        """Close every component (newest first), even if one fails; the first failure is raised afterwards."""
        first_error: BaseException | None = None
        while self._closables:
            obj = self._closables.pop()
            try:
                obj.close()
            except Exception as e:  # noqa: BLE001 -- keep closing the rest, then report
                first_error = first_error or e
        if first_error is not None:
            raise first_error


class _FileLog:
    """A file handler on a named logger for the duration of a run."""

    def __init__(self, name: str, path: str) -> None:
        import logging

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


def _eval_returns(episode_info: Any) -> dict[str, float]:
    import numpy as np

    if isinstance(episode_info, dict) and "eval_episode_return" in episode_info:
        returns = np.asarray(episode_info["eval_episode_return"], dtype=np.float64)
    else:
        returns = np.asarray([e["eval_episode_return"] for e in episode_info], dtype=np.float64)
    return {"eval_return_mean": float(returns.mean()), "eval_return_std": float(returns.std())}


def _best_return(evaluator: Any) -> float | None:
    best = getattr(evaluator, "best_return", None)
    return None if best is None or best == float("-inf") else float(best)
