"""One serial run: its components and what both serial loops (off-policy, on-policy) stand on.

:class:`SerialRun` builds the components of one run with the one builder of :mod:`ding.worker.builder` (acting side:
env managers, policy, collector, evaluator; learning side: learner, replay buffer for off-policy runs), adds the
commander, and owns what the loops share: the ``before_run`` start and the resume's restore, evaluation records
(console, ``log/eval.csv``, TensorBoard and the trackers of ``logger.types``), the end of the run (``after_run``
hooks, the Ctrl-C checkpoint, the ``result`` file) and closing everything. The loops themselves live in
:mod:`ding.engine.serial_loops`.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np
import torch

from ding.utils import atomic_write_text, close_all, shown_dir
from ding.utils.tracking import run_writer
from ding.worker import BaseSerialCommander, iteration_ckpt_name
from ding.worker.builder import build_acting, build_learning

from .resume import ResumePoint, RunState
from .training_view import EvalCSV, GracefulStop, ProgressView, ending_words


class SerialRun:
    """The components of one serial run (``with_buffer=False``: no replay buffer, for on-policy training)."""

    def __init__(self, cfg: Any, env_setting: list | None, model: torch.nn.Module | None,
                 dynamic_seed: bool | None, with_buffer: bool = True) -> None:
        self.cfg = cfg
        self._closables: list[Any] = []
        self.resumed = False
        self._start_time = time.time()
        try:
            self._build(env_setting, model, dynamic_seed, with_buffer)
        except BaseException:  # a failed (or interrupted) set-up closes what it already started, then re-raises
            self.close()
            raise

    def _build(self, env_setting: list | None, model: torch.nn.Module | None, dynamic_seed: bool | None,
               with_buffer: bool) -> None:
        cfg = self.cfg
        self.tracking = run_writer(cfg, os.path.join(cfg.exp_name, "log", "serial"))
        self._closables.append(self.tracking)
        acting = build_acting(cfg, dynamic_seed=dynamic_seed, env_setting=env_setting, model=model,
                              policy_fields=("learn", "collect", "eval", "command"), tb_logger=self.tracking)
        self._closables += acting.closables
        learning = build_learning(cfg, policy=acting.policy, tb_logger=acting.tb_logger, with_buffer=with_buffer)
        self._closables += learning.closables
        self.policy, self.tb_logger = acting.policy, acting.tb_logger
        self.collector_env, self.evaluator_env = acting.collector_env, acting.evaluator_env
        self.collector, self.evaluator = acting.collector, acting.evaluator
        self.learner, self.buffer = learning.learner, learning.buffer
        self.commander = BaseSerialCommander(cfg.policy.other.commander, self.learner, self.collector,
                                             self.evaluator, self.buffer, self.policy.command_mode)
        self.eval_csv = EvalCSV(os.path.join(cfg.exp_name, "log", "eval.csv"))
        self.last_eval: dict[str, Any] = {}
        self.state: RunState | None = None

    # ---------------------------------------------------------------- start and end (shared by the loops)
    def begin(self, loop: Any, resume: ResumePoint | None) -> None:
        """Register the run's checkpoint state (the components, the RNGs and ``loop``'s position), run the
        ``before_run`` hooks, then the resume's restore."""
        parts = {"collector": self.collector, "replay_buffer": self.buffer, "evaluator": self.evaluator,
                 "commander": self.commander, "tracking": self.tracking}  # in the order a checkpoint restores them
        self.state = state = RunState(self.learner, parts, loop, self.elapsed)
        self._start_time = time.time()
        self.learner.call_hook("before_run")
        if resume is not None:
            state.load(resume)
            self._start_time -= state.loaded_elapsed
            self.resumed = True
        self.tracking.start(self.cfg)  # the trackers' runs: new, or the ones the checkpoint names

    def evaluate(self, view: ProgressView) -> bool:
        """One evaluation (the best policy is saved as ``ckpt_best``), recorded; True once it reaches the stop value."""
        learner, collector = self.learner, self.collector
        stop_flag, episode_info = self.evaluator.eval(learner.save_checkpoint, learner.train_iter, collector.envstep)
        ret = _eval_returns(episode_info)
        self.last_eval = {"train_iter": learner.train_iter, "env_step": collector.envstep, **ret}
        self.eval_csv.append(learner.train_iter, collector.envstep, ret["eval_return_mean"], ret["eval_return_std"],
                             self.elapsed())
        if self.buffer is not None:  # every buffer type reports its fill level (the prioritized one logs more)
            self.tb_logger.add_scalar("buffer_iter/count", self.buffer.count(), learner.train_iter)
            pushed = getattr(self.buffer, "push_count", None)
            if isinstance(pushed, int):
                self.tb_logger.add_scalar("buffer_iter/push_count", pushed, learner.train_iter)
        view.eval(ret["eval_return_mean"])
        return bool(stop_flag)

    def finish(self, ended: str, stop_flag: bool, stop: GracefulStop, view: ProgressView | None) -> None:
        """``after_run`` hooks, a checkpoint when Ctrl-C stopped the run, the ``result`` file; re-raise an interrupt.

        ``ended`` is ``'stop_value'``, ``'limit'``, ``'hook'``, ``'interrupted'`` (Ctrl-C/SIGTERM) or ``'closed'``
        (a :class:`~ding.entry.Trainer` closed before its end); the end-of-run checkpoint records it so a later
        ``--resume`` can tell a finished run. An interrupted or closed run always leaves a checkpoint of where it is.
        """
        assert self.state is not None, "begin() first"
        learner = self.learner
        paused = ended in ("interrupted", "closed")
        self.state.ended = None if paused else {"reason": ended, **self.last_eval}
        learner.call_hook("after_run")
        if paused and learner.ckpt_name != iteration_ckpt_name(learner.train_iter):
            self.state.save_now()  # Ctrl-C always leaves a checkpoint to resume from, whatever the hooks do
        if view is not None:
            view.close()
        result = self._write_result(stop_flag, self.elapsed(), interrupted=stop.requested, ended=ended)
        self.tracking.finish(result, ended)
        stop.reraise(self.cfg.exp_name)

    def elapsed(self) -> float:
        """Training time of the run so far, in seconds, over all its sessions (a resume continues the clock)."""
        return time.time() - self._start_time

    def _write_result(self, stop_flag: bool, wall: float, interrupted: bool, ended: str) -> dict[str, Any]:
        result = {
            "exp_name": self.cfg.exp_name, "stop_flag": bool(stop_flag), "interrupted": interrupted, "ended": ended,
            "stop_value": self.cfg.env.get("stop_value"), "env_step": int(self.collector.envstep),
            "train_iter": int(self.learner.train_iter), "eval_return": self.last_eval.get("eval_return_mean"),
            "eval_return_std": self.last_eval.get("eval_return_std"),
            "best_eval_return": _best_return(self.evaluator), "wall_time_s": round(wall, 3), "seed": self.cfg.seed,
        }
        atomic_write_text(os.path.join(self.cfg.exp_name, "result"), json.dumps(result, indent=2) + "\n")
        why = ending_words(stop_flag, interrupted, ended)
        saved = "checkpoint and results" if interrupted or ended == "closed" else "results"
        print(f"ding: {why} after {result['env_step']:,} env steps and {result['train_iter']:,} iterations "
              f"({wall:.1f} s); {saved} in {shown_dir(self.cfg.exp_name)}", flush=True)
        return result

    def close(self) -> None:
        """Close every component (newest first), even if one fails; the first failure is raised afterwards."""
        closables, self._closables = self._closables[::-1], []
        close_all(closables)


def _eval_returns(episode_info: Any) -> dict[str, float]:
    if isinstance(episode_info, dict) and "eval_episode_return" in episode_info:
        returns = np.asarray(episode_info["eval_episode_return"], dtype=np.float64)
    else:
        returns = np.asarray([e["eval_episode_return"] for e in episode_info], dtype=np.float64)
    return {"eval_return_mean": float(returns.mean()), "eval_return_std": float(returns.std())}


def _best_return(evaluator: Any) -> float | None:
    best = getattr(evaluator, "best_return", None)
    return None if best is None or best == float("-inf") else float(best)
