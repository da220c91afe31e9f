"""``Trainer``: the serial run as a Python object, one round at a time (for notebooks, tuners and scripts).

A round is one pass of the serial loop (:mod:`ding.engine.serial_loops`): train on what is there → commander →
evaluate when due → collect. :meth:`Trainer.train` runs one round and returns a flat result dict; iterating over the
trainer yields those dicts until the stop value or a limit ends the run. ``serial_pipeline``,
``serial_pipeline_onpolicy`` and ``ding -m serial|serial_onpolicy`` run through this same object
(:meth:`Trainer.run`), so there is one loop, one set-up and one way to resume.

The set-up is the engine's (:func:`ding.engine.serial_start.start_serial_run`): nothing is written into the run's
directory before it is claimed and locked and a resume has been checked; a failed resume leaves every file of the run
as it was. The lock is held until :meth:`Trainer.close`.
"""
from __future__ import annotations

import copy
import math
import numbers
import os
import shutil
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

from ding.config import CompiledConfig, compile_run_config, read_config
from ding.engine.resume import Limits
from ding.engine.serial_checks import check_limits, load_input
from ding.engine.serial_loops import OnPolicyLoop, RoundOutcome
from ding.engine.serial_start import start_serial_run
from ding.engine.training_view import GracefulStop, TrainingInterrupted
from ding.utils import CheckpointError, get_rng_state, set_rng_state, setup_torch_threads
from ding.worker.collector.episode_callback import EpisodeCallback, call_callback

_NO_LIMIT = int(1e10)


class Trainer:
    """One serial training run, driven from Python.

    ``cfg`` is a config file path or a ``(main_config, create_config)`` pair, as for ``serial_pipeline``. The
    pipeline (off- or on-policy) follows ``policy.on_policy`` unless ``on_policy`` is given. ``max_env_step`` /
    ``max_train_iter`` limit the run (None: no limit); ``exp_name`` overrides the config's run directory;
    ``resume=True`` continues the run in that directory exactly (like ``--resume``), ``extend=True`` also a finished
    one (the stop value then no longer ends it). ``offline=True`` trains on the data set of
    ``policy.collect.data_path`` instead of collecting (``serial_pipeline_offline``).

    Use it as a context manager (or call :meth:`close`): the run's directory stays locked, and its envs open, until
    then. Results of a round (:meth:`train`)::

        round, env_step, train_iter, env_steps_this_round, train_iters_this_round,
        episodes_this_round, episode_return_mean/_min/_max, episode_length_mean (None without a finished episode),
        learn/<key>           mean over the round of each number the policy's learn forward returned (e.g.
                              learn/total_loss, learn/q_value, learn/cur_lr; absent in a round without an update)
        custom/<name>         mean of the episode callbacks' on_episode_end metrics over the round's episodes
        evaluated, eval_return, eval_return_std, eval_train_iter   the latest evaluation (None before the first)
        time_train_s, time_eval_s, time_collect_s, time_round_s, time_total_s
        done, stop_reason     stop_reason: 'stop_value', 'limit' or 'hook' in the round that ended the run, else None

    plus what ``on_learn_on_batch`` / ``on_train_result`` callbacks added.
    """

    def __init__(
        self,
        cfg: str | os.PathLike | tuple[dict, dict],
        seed: int = 0,
        *,
        env_setting: list | None = None,
        model: torch.nn.Module | None = None,
        max_env_step: int | None = None,
        max_train_iter: int | None = None,
        dynamic_seed: bool | None = True,
        resume: bool | None = False,
        extend: bool = False,
        exp_name: str | None = None,
        on_policy: bool | None = None,
        source: str | None = None,
        offline: bool = False,
        _stop: GracefulStop | None = None,
        _exact_dir: bool = False,
    ) -> None:
        self._closed = True  # until the set-up succeeded: close() then has nothing to do
        self._done = False
        self._failed: BaseException | None = None
        self._stop = _stop  # the Ctrl-C guard of the call in progress (or the caller's, for the trainer's life)
        self._run_mode = _stop is not None  # Ctrl-C ends the run (the pipelines), rather than pausing it
        self._running = False
        self.last_result: dict[str, Any] | None = None
        self._round = 0
        setup_torch_threads()
        check_limits(max_train_iter=max_train_iter, max_env_step=max_env_step)
        main_cfg, create_cfg, source = load_input(cfg, source, where="Trainer")
        if exp_name is not None:
            main_cfg["exp_name"] = exp_name
        if resume is None:
            resume = bool(main_cfg.get("policy", {}).get("learn", {}).get("resume_training", False))
        compiled = compile_run_config(main_cfg, create_cfg, seed, source=source)
        limits = Limits(_NO_LIMIT if max_train_iter is None else max_train_iter,
                        _NO_LIMIT if max_env_step is None else max_env_step)
        self._compiled = compiled
        self._exit = ExitStack()
        try:
            with self._guard() as stop:
                self._run, self._loop = start_serial_run(
                    compiled, self._exit, limits=limits, resume=bool(resume), extend=extend, on_policy=on_policy,
                    source=source, exact_dir=_exact_dir, env_setting=env_setting, model=model,
                    dynamic_seed=dynamic_seed, offline=offline)
                self.on_policy = isinstance(self._loop, OnPolicyLoop)
                self._closed = False
                self._mark = (self._run.collector.envstep, self._run.learner.train_iter)
                if stop.requested:  # Ctrl-C during the set-up: end here, with a checkpoint
                    self._end("interrupted", RoundOutcome(ended="interrupted"), stop)
        except BaseException:
            self._closed = True
            self._exit.close()  # (a failed set-up of a new run also removes the directory it claimed)
            raise
        # a trainer dropped without close() (or left open at exit) still releases its envs and its directory lock
        self._release = weakref.finalize(self, self._exit.close)
        self._train_result_callbacks = [cb for cb in self._run.collector.callbacks
                                        if type(cb).on_train_result is not EpisodeCallback.on_train_result]

    # ------------------------------------------------------------------ what it holds
    @property
    def cfg(self) -> Any:
        """The compiled config of the run (``cfg.exp_name`` is its directory)."""
        return self._run.cfg

    @property
    def exp_dir(self) -> str:
        return str(self._run.cfg.exp_name)

    @property
    def policy(self) -> Any:
        """The policy being trained (its ``eval_mode`` / ``collect_mode`` views act; still usable after close)."""
        return self._run.policy

    @property
    def learner(self) -> Any:
        """The run's ``BaseLearner``: ``trainer.learner.register_hook(hook)``, ``show_hooks(trainer.learner.hooks)``."""
        return self._run.learner

    @property
    def done(self) -> bool:
        """True once the run ended (stop value, a limit, a hook, Ctrl-C inside :meth:`run`)."""
        return self._done

    @property
    def env_step(self) -> int:
        return int(self._run.collector.envstep)

    @property
    def train_iter(self) -> int:
        return int(self._run.learner.train_iter)

    # ------------------------------------------------------------------ training
    def train(self) -> dict[str, Any]:
        """Run one round and return its result dict (see the class doc).

        Ctrl-C (SIGINT/SIGTERM) during a round ends it at the next safe point with a checkpoint and raises
        :class:`~ding.engine.training_view.TrainingInterrupted`; the trainer stays usable (call ``train()`` again to
        go on). Inside :meth:`run` the run ends instead, as ``ding -m serial`` does.
        """
        self._check_usable("train")
        with self._guard() as stop:
            t0 = time.perf_counter()
            try:
                out = self._loop.round(stop)
                self._round += 1
                result = self._result(out, time.perf_counter() - t0)
                for cb in self._train_result_callbacks:
                    extra = call_callback(cb, "on_train_result", result)
                    if extra:
                        result.update(extra)
            except BaseException as e:  # the run's state is unknown now: no more rounds, no checkpoint of it
                self._failed = e
                raise
            self.last_result = result
            if out.ended == "interrupted" or (stop.requested and out.ended is None):
                if self._run_mode or self._running:
                    self._end("interrupted", out, stop)  # raises TrainingInterrupted
                else:
                    self._pause(stop)  # raises TrainingInterrupted
            elif out.ended is not None:
                self._end(out.ended, out, stop)
        return result

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Yield :meth:`train` results until the run ends (the last one has ``done=True``). ``break`` leaves the
        trainer as it is: iterate again, :meth:`save`, or :meth:`close` and later :meth:`restore`."""
        while not self._done:
            yield self.train()

    def __call__(self) -> Iterator[dict[str, Any]]:
        return iter(self)

    def run(self) -> dict[str, Any] | None:
        """Train until the run ends; return the last round's result. Ctrl-C ends the run with a checkpoint and the
        ``result`` file, then raises ``TrainingInterrupted`` (what ``serial_pipeline`` and the CLI do)."""
        self._check_usable("run")
        with self._guard():
            self._running = True
            try:
                while not self._done:
                    self.train()
            finally:
                self._running = False
        return self.last_result

    def evaluate(self, n_episode: int | None = None) -> dict[str, Any]:
        """One evaluation of the current policy now, outside the run's schedule: ``{'eval_return_mean',
        'eval_return_std', 'eval_episode_return', 'train_iter', 'env_step'}``. It leaves the run as it was (no eval
        log row, no best checkpoint, the evaluator's schedule and every RNG unchanged), so training goes on exactly
        as it would have."""
        self._check_usable("evaluate")
        run = self._run
        evaluator_state, rng = run.evaluator.state_dict(), get_rng_state()
        try:
            _, info = run.evaluator.eval(None, run.learner.train_iter, run.collector.envstep, n_episode=n_episode)
        finally:
            run.evaluator.load_state_dict(evaluator_state)
            set_rng_state(rng)
        returns = [float(r) for r in info["eval_episode_return"]]
        mean = sum(returns) / len(returns)
        std = math.sqrt(sum((r - mean) ** 2 for r in returns) / len(returns))
        return {"eval_return_mean": mean, "eval_return_std": std, "eval_episode_return": returns,
                "train_iter": self.train_iter, "env_step": self.env_step}

    # ------------------------------------------------------------------ save / restore / close
    def save(self, path: str | os.PathLike | None = None) -> str:
        """Write a checkpoint of the run as it is now (between rounds: exact) and return its path.

        Without ``path`` it goes to the run's own ``ckpt/`` (what ``--resume`` and :meth:`restore` of the run's
        directory continue from). With ``path`` (a new or empty directory) a copy of the run at this point is made
        there: its config (``exp_name`` = ``path``), this checkpoint and the eval log, so ``Trainer.restore(path)``
        continues from here in that directory while this run goes on in its own (a fork, e.g. for a tuner).
        """
        self._check_usable("save")
        ckpt = self._run.learner.save_checkpoint()
        if ckpt is None:
            raise CheckpointError("Trainer.save: this learner does not write checkpoints (rank != 0)")
        if path is None:
            return ckpt
        dest = os.fspath(path)
        if os.path.exists(dest) and (not os.path.isdir(dest) or os.listdir(dest)):
            raise CheckpointError(f"Trainer.save: '{dest}' exists and is not an empty directory; give a new "
                                  "directory for the copy of the run")
        os.makedirs(os.path.join(dest, "ckpt"), exist_ok=True)
        fork = CompiledConfig(copy.deepcopy(self._compiled.cfg), copy.deepcopy(self._compiled.create_cfg))
        fork.cfg.exp_name = dest
        fork.save()
        shutil.copy2(ckpt, os.path.join(dest, "ckpt", os.path.basename(ckpt)))
        eval_csv = self._run.eval_csv.path
        if os.path.exists(eval_csv):
            os.makedirs(os.path.join(dest, "log"), exist_ok=True)
            shutil.copy2(eval_csv, os.path.join(dest, "log", "eval.csv"))
        return os.path.join(dest, "ckpt", os.path.basename(ckpt))

    @classmethod
    def restore(cls, path: str | os.PathLike, *, max_env_step: int | None = None,
                max_train_iter: int | None = None, extend: bool = False, env_setting: list | None = None,
                model: torch.nn.Module | None = None, dynamic_seed: bool | None = True) -> Trainer:
        """Continue the run in directory ``path`` from its newest checkpoint, exactly (like ``--resume``): its own
        ``total_config.py`` and seed, the same directory. A finished run needs ``extend=True`` and a higher limit."""
        path = os.path.normpath(os.fspath(path))
        config = os.path.join(path, "total_config.py")
        if os.path.isfile(path):
            raise CheckpointError(f"Trainer.restore: '{path}' is a file; give the run's directory (the one holding "
                                  "total_config.py and ckpt/)")
        if not os.path.isfile(config):
            raise CheckpointError(f"Trainer.restore: '{path}' is not a ding run directory (no total_config.py in "
                                  "it); give the directory a run or Trainer.save(path) wrote")
        main_cfg, create_cfg = read_config(config)
        return cls((main_cfg, create_cfg), seed=int(main_cfg.get("seed", 0)), env_setting=env_setting, model=model,
                   max_env_step=max_env_step, max_train_iter=max_train_iter, dynamic_seed=dynamic_seed,
                   resume=True, extend=extend, exp_name=path, source=config, _exact_dir=True)

    def close(self) -> None:
        """End the session: a run that has not ended gets a checkpoint of where it is and its ``result`` file
        (``ended: 'closed'``; :meth:`restore` continues it), then every env, logger and the directory lock are
        released. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._done and self._failed is None:
                self._done = True
                self._run.finish("closed", False, GracefulStop(), self._loop.view)
        finally:
            self._release()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    @contextmanager
    def _guard(self) -> Iterator[GracefulStop]:
        """The Ctrl-C guard of the current call: the caller's (run mode) or one for this call only."""
        if self._stop is not None:
            yield self._stop
            return
        with GracefulStop() as stop:
            self._stop = stop
            try:
                yield stop
            finally:
                self._stop = None

    def _check_usable(self, what: str) -> None:
        if self._failed is not None:
            raise RuntimeError(
                f"Trainer.{what}: an earlier round failed ({type(self._failed).__name__}: {self._failed}); close this "
                f"trainer and continue from its last checkpoint with Trainer.restore('{self.exp_dir}')")
        if self._closed:
            raise RuntimeError(f"Trainer.{what}: the trainer is closed; Trainer.restore('{self.exp_dir}') continues "
                               "the run")
        if self._done and what != "evaluate" and what != "save":
            reason = (self.last_result or {}).get("stop_reason") or "it ended"
            raise RuntimeError(
                f"Trainer.{what}: the run is finished ({reason}); to train it further, close it and use "
                f"Trainer.restore('{self.exp_dir}', extend=True, max_env_step=...)")

    def _end(self, ended: str, out: RoundOutcome, stop: GracefulStop) -> None:
        self._done = True
        self._run.finish(ended, out.stop_flag, stop, self._loop.view)

    def _pause(self, stop: GracefulStop) -> None:
        """Ctrl-C outside run mode: a checkpoint of where the run is, then TrainingInterrupted; the trainer goes on."""
        self._run.learner.save_checkpoint()
        raise TrainingInterrupted(stop.signal_name or "a signal", self.exp_dir)

    def _result(self, out: RoundOutcome, round_time: float) -> dict[str, Any]:
        run, loop = self._run, self._loop
        env_step, train_iter = int(run.collector.envstep), int(run.learner.train_iter)
        episodes = run.collector.pop_finished_episodes()
        returns = [e["eval_episode_return"] for e in episodes if e["eval_episode_return"] is not None]
        result: dict[str, Any] = {
            "round": self._round, "env_step": env_step, "train_iter": train_iter,
            "env_steps_this_round": env_step - self._mark[0], "train_iters_this_round": train_iter - self._mark[1],
            "episodes_this_round": len(episodes),
            "episode_return_mean": sum(returns) / len(returns) if returns else None,
            "episode_return_min": min(returns) if returns else None,
            "episode_return_max": max(returns) if returns else None,
            "episode_length_mean": sum(e["step"] for e in episodes) / len(episodes) if episodes else None,
        }
        self._mark = (env_step, train_iter)
        result.update(_means(loop.learn_logs, "learn/"))
        result.update(_means([e["custom"] for e in episodes if "custom" in e], "custom/"))
        last = run.last_eval
        result.update({
            "evaluated": out.evaluated, "eval_return": last.get("eval_return_mean"),
            "eval_return_std": last.get("eval_return_std"), "eval_train_iter": last.get("train_iter"),
            "time_train_s": out.train_time, "time_eval_s": out.eval_time, "time_collect_s": out.collect_time,
            "time_round_s": round_time, "time_total_s": run.elapsed(),
            "done": out.ended in ("stop_value", "limit", "hook"),
            "stop_reason": out.ended if out.ended in ("stop_value", "limit", "hook") else None,
        })
        result.update(loop.callback_result)
        return result


def _means(logs: list[Mapping[str, Any]], prefix: str) -> dict[str, float]:
    """``{prefix + key: mean}`` of every number (python, numpy or 0-d tensor) under the same key in ``logs``."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for log in logs:
        for k, v in log.items():
            if isinstance(v, bool):
                continue
            if isinstance(v, numbers.Real):
                x = float(v)
            elif isinstance(v, torch.Tensor) and v.numel() == 1:
                x = float(v.item())
            elif hasattr(v, "shape") and getattr(v, "size", 0) == 1 and hasattr(v, "item"):  # numpy 0-d / (1,)
                x = float(v.item())
            else:
                continue
            sums[k] = sums.get(k, 0.0) + x
            counts[k] = counts.get(k, 0) + 1
    return {prefix + k: sums[k] / counts[k] for k in sums}
