"""``tune``: hyperparameter search with Optuna, each trial a :class:`~ding.entry.Trainer` (``ding -m tune``).

Each evaluation of a trial's run is reported to Optuna (step = the evaluation's index, so every trial's k-th
evaluation is compared with the others' k-th), so its pruner (median, Hyperband) stops poor trials early. The study
lives in an SQLite file: several processes (or Slurm jobs) given the same ``storage`` share it, each asking for the
next trial, and a rerun after Ctrl-C continues it until ``n_trials`` trials have finished. Each trial trains in its
own run directory ``<out_dir>/trial_<number>``. At the end: ``trials.csv``, ``history.png``, ``importance.png`` and
``best_config.py`` in ``out_dir`` (docs/tuning.md).
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ding.engine.serial_checks import load_input
from ding.engine.training_view import GracefulStop, TrainingInterrupted
from ding.engine.tune_report import best_trial, format_table, write_best_config, write_plots, write_table
from ding.engine.tune_space import apply_params, check_space, load_space
from ding.utils import ConfigError, DingError, atomic_write_text

from .trainer import Trainer

PRUNERS = ("median", "hyperband", "none")
SAMPLERS = ("tpe", "random")


@dataclass
class TuneResult:
    """What a search found: the study, its best parameters and value (None before a trial completed), the files."""

    study: Any
    best_params: dict[str, Any] | None
    best_value: float | None
    out_dir: str
    files: dict[str, str] = field(default_factory=dict)

    @property
    def pruned_fraction(self) -> float:
        from optuna.trial import TrialState

        finished = [t for t in self.study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
        return sum(t.state == TrialState.PRUNED for t in finished) / max(len(finished), 1)


def tune(cfg: str | os.PathLike | tuple[Mapping, Mapping], space: str | os.PathLike | Mapping[str, Any],
         n_trials: int, *, seed: int = 0, study_name: str | None = None, storage: str | None = None,
         out_dir: str | None = None, pruner: str = "median", sampler: str = "tpe", sampler_seed: int | None = None,
         max_env_step: int | None = None, max_train_iter: int | None = None, n_startup_trials: int = 4,
         n_warmup_steps: int = 2, source: str | None = None) -> TuneResult:
    """Search ``space`` for the config ``cfg`` (a file or a ``(main_config, create_config)`` pair) until the study
    has ``n_trials`` finished trials (completed, pruned or failed; a trial stopped by Ctrl-C does not count).

    Each trial trains with ``seed`` (the same for all: trials differ in their parameters only) up to
    ``max_env_step`` / ``max_train_iter`` or the config's stop value; its value is the best evaluation return it
    reached (the best config: the highest value, then the fewest env steps). ``out_dir`` (default
    ``./<exp_name>_tune``) holds the study (``storage`` default ``sqlite:///<out_dir>/study.db``), the trials' run
    directories and the results. ``pruner``: 'median' (Optuna's ``MedianPruner(n_startup_trials, n_warmup_steps)``),
    'hyperband' or 'none'; ``sampler``: 'tpe' or 'random', seeded with ``sampler_seed`` (None: fresh, so that
    workers sharing a study draw different points). ``source``
    names the file a config pair came from (in errors, and for its ``import_names``).
    """
    import optuna

    if n_trials < 1:
        raise ConfigError(f"tune: n_trials must be >= 1, got {n_trials}")
    if pruner not in PRUNERS or sampler not in SAMPLERS:
        raise ConfigError(f"tune: pruner must be one of {PRUNERS} and sampler one of {SAMPLERS}; got "
                          f"pruner={pruner!r}, sampler={sampler!r}")
    main_cfg, create_cfg, source = load_input(cfg, source, where="tune")
    space_source = os.fspath(space) if not isinstance(space, Mapping) else "the search space"
    dists = load_space(space)
    check_space(dists, main_cfg, create_cfg, source, space_source)
    base_name = str(main_cfg.get("exp_name") or "default_experiment")
    out_dir = os.path.normpath(out_dir or f"{base_name}_tune")
    os.makedirs(out_dir, exist_ok=True)
    study_name = study_name or os.path.basename(out_dir)
    storage = storage or f"sqlite:///{os.path.abspath(os.path.join(out_dir, 'study.db'))}"
    with _init_lock(out_dir), warnings.catch_warnings():  # two workers creating one database: one at a time
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # heartbeats: a trial whose process died (SIGKILL, a node lost) is failed after the grace period, so it
        # does not hold one of the n_trials forever
        # SQLite: wait up to a minute for another writer (a worker beside this one, this trial's heartbeat thread)
        # instead of failing with 'database is locked' after sqlite3's 5 s on a busy machine
        engine = {"connect_args": {"timeout": 60}} if storage.startswith("sqlite") else None
        rdb = optuna.storages.RDBStorage(storage, engine_kwargs=engine, heartbeat_interval=30, grace_period=120)
        study = optuna.create_study(
            study_name=study_name, storage=rdb, load_if_exists=True, direction="maximize",
            sampler=_sampler(sampler, sampler_seed, n_startup_trials),
            pruner=_pruner(pruner, n_startup_trials, n_warmup_steps))

    def objective(trial: Any) -> float:
        params = {key: _suggest(trial, key, dist) for key, dist in dists.items()}
        run_cfg = apply_params(main_cfg, params)
        run_cfg.exp_name = os.path.join(out_dir, f"trial_{trial.number:04d}")
        trial.set_user_attr("pid", os.getpid())
        best, k = None, 0
        try:
            with Trainer((run_cfg, create_cfg), seed=seed, max_env_step=max_env_step, max_train_iter=max_train_iter,
                         source=source, _stop=stop) as trainer:
                trial.set_user_attr("run_dir", trainer.exp_dir)
                for r in trainer:
                    trial.set_user_attr("env_step", r["env_step"])
                    trial.set_user_attr("train_iter", r["train_iter"])
                    if not r["evaluated"]:
                        continue
                    best = r["eval_return"] if best is None else max(best, r["eval_return"])
                    trial.report(float(r["eval_return"]), k)
                    k += 1
                    if not r["done"] and trial.should_prune():
                        raise optuna.TrialPruned(f"pruned after evaluation {k} (return {r['eval_return']:.4g})")
        except (KeyboardInterrupt, TrainingInterrupted):
            trial.set_user_attr("interrupted", True)  # not counted: a rerun runs a new trial in its place
            raise
        if best is None:
            raise optuna.TrialPruned("the run ended before its first evaluation")
        return float(best)

    # Ctrl-C is a stop request for the whole search, polled by the trial's run and between trials: a signal
    # raised in the middle of Optuna's writes to the study's database could leave its SQLite lock held
    stop = GracefulStop()
    try:
        with stop:
            while _counted(study) < n_trials:
                if stop.requested:
                    raise KeyboardInterrupt
                study.optimize(objective, n_trials=1, catch=(DingError,))
    except KeyboardInterrupt:
        print(f"ding: tune interrupted; {_counted(study)} of {n_trials} trials of study '{study_name}' are done. "
              "Run the same command again to continue the study.", file=sys.stderr)
        raise
    return report(study, main_cfg, create_cfg, out_dir, base_name)


def report(study: Any, main_cfg: Mapping, create_cfg: Mapping, out_dir: str, base_name: str) -> TuneResult:
    """Write the results table, the plots and the best config of ``study`` into ``out_dir``."""
    files = {"table": write_table(study, os.path.join(out_dir, "trials.csv"))}
    files.update(write_plots(study, out_dir))
    best_path = os.path.join(out_dir, "best_config.py")
    best = write_best_config(study, main_cfg, create_cfg, best_path, f"{base_name}_best")
    if best is not None:
        files["best_config"] = best_path
    text = format_table(study)
    atomic_write_text(os.path.join(out_dir, "trials.txt"), text + "\n")
    print(text)
    value = best_trial(study).value if best is not None else None
    return TuneResult(study, best, value, out_dir, files)


def _counted(study: Any) -> int:
    """Trials that take up one of the ``n_trials``: finished ones (not those stopped by Ctrl-C) and running ones (a
    worker beside this one is on them)."""
    from optuna.trial import TrialState

    return sum(1 for t in study.get_trials(deepcopy=False)
               if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
               or (t.state == TrialState.FAIL and not t.user_attrs.get("interrupted")))


def _suggest(trial: Any, key: str, dist: Any) -> Any:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(dist, FloatDistribution):
        return trial.suggest_float(key, dist.low, dist.high, log=dist.log, step=dist.step)
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(key, dist.low, dist.high, log=dist.log, step=dist.step)
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(key, list(dist.choices))
    raise ConfigError(f"tune: '{key}': unsupported distribution {type(dist).__name__}")


def _sampler(name: str, seed: int | None, n_startup_trials: int) -> Any:
    import optuna

    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(n_startup_trials, 1))


def _pruner(name: str, n_startup_trials: int, n_warmup_steps: int) -> Any:
    import optuna

    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=n_startup_trials, n_warmup_steps=n_warmup_steps)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=max(n_warmup_steps, 1))
    return optuna.pruners.NopPruner()



@contextmanager
def _init_lock(out_dir: str, timeout_s: float = 120.0) -> Iterator[None]:
    """``<out_dir>/.study_init.lock`` held while a worker opens the study: SQLite schema creation is not safe when
    two processes do it at once. Waits at most ``timeout_s`` for the other worker."""
    import fcntl

    with open(os.path.join(out_dir, ".study_init.lock"), "a") as f:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"tune: another worker has held '{f.name}' for {timeout_s:.0f} s while "
                                       "opening the study; is it stuck? Stop it, or remove the lock file") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
