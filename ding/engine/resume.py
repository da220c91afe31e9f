"""Exact resume of a serial run: what goes into a checkpoint besides the policy, and where the loop restarts.

Every ``iteration_N.pth.tar`` the learner writes (periodic hook, Ctrl-C, end of run) carries, under ``extra``, the
collector (partial trajectories, env step, the env manager's pickled envs), the replay buffer of an off-policy run
(contents, priorities, its RNG), the evaluator (best return, last evaluation), the commander, every global RNG, and
the loop position (off-policy: which update of the current collect cycle comes next, plus a priority update still
owed to the buffer when the checkpoint was written from inside ``learner.train``; on-policy: collected data not
trained on yet). Loading it puts every component back where it was, so the resumed run makes the same decisions, bit
for bit, as a run that never stopped.

A run owns its directory: :func:`lock_run_dir` claims (new run) or chooses (resume) it and locks it for the run's
life. A resume is checked (:func:`check_resume`) before anything is written, and what the workers add to the
directory before the restore succeeds is taken back if it fails (:class:`AppendUndo`).
"""
from __future__ import annotations

import copy
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ding.config import claim_exp_dir
from ding.policy import create_policy
from ding.utils import CheckpointError, DirLock, ResumeError, get_rng_state, set_rng_state
from ding.worker import list_iteration_checkpoints, load_latest_checkpoint, load_policy_state

_RENEWED = re.compile(r"_\d{6}_\d{6}(_\d+)?")  # the suffix compile_config gives a run whose directory existed


def resume_dir(exp_name: str) -> str:
    """The run directory ``--resume`` continues: ``./<exp_name>/`` or, when later runs of the same config went to
    ``./<exp_name>_<YYMMDD_HHMMSS>/`` (because the directory existed), whichever holds the most recent checkpoint.
    A directory given exactly by name (e.g. ``--exp-name cartpole_dqn_seed0_261121_101500``) is used as is."""
    base = os.path.normpath(exp_name)
    parent = os.path.dirname(base) or "."
    prefix = os.path.basename(base) + "_"
    candidates = [base]
    if os.path.isdir(parent):
        candidates += [os.path.join(parent, d) if parent != "." else d for d in sorted(os.listdir(parent))
                       if d.startswith(prefix) and _RENEWED.fullmatch(d[len(prefix) - 1:])]

    def newest_ckpt_time(d: str) -> float:
        ckpts = list_iteration_checkpoints(os.path.join(d, "ckpt"))
        return max((os.path.getmtime(p) for _, p in ckpts), default=-1.0)

    best = max(candidates, key=newest_ckpt_time)
    return best if newest_ckpt_time(best) >= 0 else base


def lock_run_dir(exp_name: str, resume: bool, exact: bool = False) -> DirLock:
    """The run's directory, locked for the life of the run: a new directory for a new run (``exp_name``, or
    ``<exp_name>_<timestamp>`` when that exists), the directory to continue for a resume (:func:`resume_dir`, or
    ``exp_name`` itself with ``exact=True``).

    A directory another ding process holds is refused with one ``LockError`` naming it and the holder's pid.
    """
    if not resume:  # (the caller announces a new name once its run is set up: config/exp_dir.announce_exp_dir)
        return DirLock(claim_exp_dir(exp_name, announce=False), what="run").acquire()
    exp_dir = os.path.normpath(exp_name) if exact else resume_dir(exp_name)
    ckpt_dir = os.path.join(exp_dir, "ckpt")
    if not list_iteration_checkpoints(ckpt_dir):  # checked before locking: a failed resume creates nothing
        raise CheckpointError(
            f"resume: no checkpoint to resume from in '{ckpt_dir}'. Resume continues the run of the same exp_name "
            "in the current directory; start it without --resume first (or check exp_name and the directory)."
        )
    hint = ("two processes cannot write one run: wait for it to end (Ctrl-C stops it with a checkpoint), or give "
            "another run's directory with --exp-name")
    return DirLock(exp_dir, what="run", hint=hint).acquire()


@dataclass(frozen=True)
class Limits:
    """Where a run stops at the latest: ``max_train_iter`` / ``max_env_step`` (``--train-iter`` / ``--env-step``)."""

    train_iter: int = int(1e10)
    env_step: int = int(1e10)

    def given(self) -> bool:
        return self.train_iter < int(1e10) or self.env_step < int(1e10)

    def describe(self) -> str:
        parts = [f"--train-iter {self.train_iter}" if self.train_iter < int(1e10) else "",
                 f"--env-step {self.env_step}" if self.env_step < int(1e10) else ""]
        return " and ".join(p for p in parts if p)


@dataclass
class ResumePoint:
    """The checkpoint a resume continues from, read and checked before anything is written."""

    path: str
    checkpoint: dict


def check_resume(cfg: Any, model: Any, limits: Limits, extend: bool = False) -> ResumePoint:
    """Read the newest good checkpoint of ``./<cfg.exp_name>/ckpt`` and check it can resume this config: it holds
    run state, the run is not finished (unless ``extend``) nor past ``limits``, and its policy state fits a freshly
    built policy. Nothing is written; errors say what to do."""
    ckpt_dir = os.path.join(cfg.exp_name, "ckpt")
    log = logging.getLogger("ding.resume")
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
    found = load_latest_checkpoint(ckpt_dir, log, allow_pickle=True)  # this run's own files (serial mode)
    if found is None:
        raise CheckpointError(f"resume: every checkpoint in '{ckpt_dir}' is damaged; nothing to resume from")
    path, checkpoint = found
    if not isinstance(checkpoint.get("extra"), dict) or "loop" not in checkpoint["extra"]:
        raise CheckpointError(
            f"resume: checkpoint '{path}' holds only the policy (no run state); it cannot resume a run exactly. "
            "Load it as weights instead (learner hook load_ckpt_before_run)."
        )
    _check_not_finished(cfg, checkpoint, limits, extend)
    policy = create_policy(cfg.policy, model=copy.deepcopy(model), enable_field=["learn"])
    load_policy_state(policy.learn_mode, checkpoint, path)  # a model that changed shape fails here
    return ResumePoint(path, checkpoint)


def _check_not_finished(cfg: Any, checkpoint: dict, limits: Limits, extend: bool) -> None:
    """Refuse a resume that would train a finished run further (or could not train at all) by accident."""
    name = cfg.exp_name
    train_iter, env_step = int(checkpoint.get("last_iter", 0)), int(checkpoint.get("last_step", 0))
    if train_iter >= limits.train_iter or env_step >= limits.env_step:
        raise ResumeError(
            f"resume: run '{name}' is already at train_iter {train_iter:,} and env step {env_step:,}: nothing is left "
            f"to do under {limits.describe()}. To continue it, raise --train-iter / --env-step above where it stopped "
            "(max_train_iter / max_env_step from Python)."
        )
    ended = checkpoint["extra"]["loop"].get("ended")
    if not ended or extend:
        return
    how = ("add --extend with a higher --train-iter or --env-step (extend=True from Python; the stop value then no "
           "longer ends it)")
    if ended["reason"] == "stop_value":
        reached, stop_value = ended.get("eval_return_mean"), cfg.env.get("stop_value")
        if reached is None or stop_value is None or reached >= stop_value:
            raise ResumeError(
                f"resume: run '{name}' is finished: it reached its stop value (eval return {reached} at train_iter "
                f"{train_iter:,}, env step {env_step:,}). Resuming would train it further and overwrite its result. To "
                f"extend it on purpose, {how}, or raise env.stop_value above {reached} in the config."
            )
    elif ended["reason"] == "hook":
        raise ResumeError(
            f"resume: run '{name}' is finished: a learner hook ended it (learner.request_stop) at train_iter "
            f"{train_iter:,}. To continue it on purpose, {how}."
        )


class AppendUndo:
    """Snapshot of a run directory taken before a resume builds its workers; :meth:`undo` puts it back.

    Between the snapshot and the restored checkpoint the run only adds to its directory: log lines are appended,
    TensorBoard starts a new event file. If the restore fails, ``undo`` removes the new files and directories and
    cuts the grown files back to their old length, so a failed resume leaves every file as it was. Everything that
    rewrites a file (config files, ``eval.csv`` truncation, checkpoints) happens only after the restore succeeded.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._sizes: dict[str, int] = {}
        self._dirs: set[str] = set()
        for root, dirs, files in os.walk(path):
            self._dirs.update(os.path.join(root, d) for d in dirs)
            for name in files:
                file = os.path.join(root, name)
                self._sizes[file] = os.lstat(file).st_size  # a link (W&B's latest-run) as itself: it may dangle

    def undo(self) -> None:
        for root, dirs, files in os.walk(self.path, topdown=False):
            for name in files:
                file = os.path.join(root, name)
                old = self._sizes.get(file)
                if old is None:
                    os.remove(file)
                elif not os.path.islink(file) and os.path.getsize(file) > old:
                    os.truncate(file, old)
            for name in dirs:
                d = os.path.join(root, name)
                if d not in self._dirs:
                    os.rmdir(d)


class RunState:
    """Registers a run's checkpoint state with the learner: its components, the RNGs and the loop's position.

    Owned by the run (:meth:`~ding.engine.serial_run.SerialRun.begin` creates it) and knows nothing of it: ``parts``
    maps each checkpoint entry to its component (``state_dict()`` / ``load_state_dict(state)``; None: the run has
    none, e.g. no replay buffer on-policy), ``loop`` gives its position with ``state_dict()`` /
    ``load_state_dict(state, path)``, and ``clock()`` is the run's training time so far.
    """

    def __init__(self, learner: Any, parts: Mapping[str, Any], loop: Any, clock: Callable[[], float]) -> None:
        self.learner = learner
        self.loop = loop
        self._clock = clock
        self._collector = parts["collector"]
        for name, part in parts.items():
            if part is not None:
                learner.register_checkpoint_extra(name, part.state_dict, part.load_state_dict)
        learner.register_checkpoint_extra("rng", get_rng_state, set_rng_state)
        learner.register_checkpoint_extra("loop", self._loop_state, self._set_loop_state)
        self._loaded_loop: dict[str, Any] | None = None
        self.ended: dict[str, Any] | None = None  # how the run ended (set after the loop; None while it trains)
        self.loaded_elapsed = 0.0  # training time of the sessions before a resume

    def _loop_state(self) -> dict[str, Any]:
        return {**self.loop.state_dict(), "elapsed_s": self._clock(), "ended": self.ended}

    def _set_loop_state(self, state: dict[str, Any]) -> None:
        self._loaded_loop = dict(state)

    def save_now(self) -> str | None:
        return self.learner.save_checkpoint()

    def load(self, point: ResumePoint) -> None:
        """Restore everything from a checked resume point: components, RNGs, then the loop's position."""
        self._loaded_loop = None
        path = point.path
        learner = self.learner
        learner.load_checkpoint_state(point.checkpoint, path)
        if self._loaded_loop is None:
            raise CheckpointError(
                f"resume: checkpoint '{path}' holds only the policy (no run state); it cannot resume a run exactly. "
                "Load it as weights instead (learner hook load_ckpt_before_run)."
            )
        self.loop.load_state_dict(self._loaded_loop, path)
        self.loaded_elapsed = float(self._loaded_loop.get("elapsed_s", 0.0))
        envstep = self._collector.envstep
        learner.info(f"resumed from {path} at train_iter {learner.train_iter}, env step {envstep}")
        print(f"ding: resumed from {path} (train_iter {learner.train_iter}, env step {envstep})")
