"""What a training run shows and how it stops: progress line, eval CSV logs (``eval.csv``; a league run's
``battle_eval.csv``), graceful Ctrl-C."""
from __future__ import annotations

import csv
import io
import math
import os
import signal
import sys
import time
from typing import Any

from ding.utils import atomic_write_text, set_status_line

from .stop_signals import StopSignals

_EVAL_FIELDS = ("train_iter", "env_step", "eval_return_mean", "eval_return_std", "wall_time")
BATTLE_EVAL_FIELDS = ("train_iter", "env_step", "evaluator", "return_mean", "wins", "draws", "losses", "win_rate",
                      "rating", "wall_time")


class GracefulStop(StopSignals):
    """Turn the first SIGINT/SIGTERM into a stop request the loop honours at its next safe point.

    The loop then writes a checkpoint and ends; :meth:`reraise` raises :class:`TrainingInterrupted` (a
    ``KeyboardInterrupt``) afterwards so callers see the interruption. A second signal aborts at once. Outside the main
    thread signals cannot be caught, so the object is inert there.
    """

    @property
    def signal_name(self) -> str | None:
        return signal.Signals(self.signum).name if self.signum is not None else None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        super()._handle(signum, frame)
        try:  # a handler runs between two bytecodes of the main thread, maybe inside its own write to stderr
            print(f"\nding: {self.signal_name} received; saving a checkpoint at the next safe point "
                  "(send it again to abort without saving)", file=sys.stderr, flush=True)
        except RuntimeError:  # "reentrant call": the stop is recorded all the same, only its line is lost
            pass

    def reraise(self, exp_dir: str) -> None:
        if self.requested:
            raise TrainingInterrupted(self.signal_name or "a signal", exp_dir)


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C/SIGTERM after writing its checkpoint; ``exp_dir`` is the run's directory."""

    def __init__(self, signal_name: str, exp_dir: str) -> None:
        super().__init__(f"training stopped by {signal_name}; checkpoint saved in ./{exp_dir}/ckpt")
        self.exp_dir = exp_dir


class ProgressView:
    """A one-line progress display on a terminal; silent when stdout is not a TTY (logs stay clean)."""

    def __init__(self, max_env_step: int, max_train_iter: int, stop_value: float | None,
                 enabled: bool | None = None, min_interval: float = 0.5) -> None:
        self.enabled = bool(getattr(sys.stdout, "isatty", lambda: False)()) if enabled is None else enabled
        self.max_env_step = max_env_step if max_env_step < int(1e10) else None
        self.max_train_iter = max_train_iter if max_train_iter < int(1e10) else None
        # no stop value (the default is inf): show the last return alone, not '/inf' and an empty bar
        self.stop_value = stop_value if stop_value is not None and math.isfinite(stop_value) else None
        self.min_interval = min_interval
        self._last_draw = 0.0
        self._t0 = time.time()
        self._env_step0: int | None = None
        self.last_eval: float | None = None
        self.env_step = 0
        self.train_iter = 0

    def update(self, env_step: int, train_iter: int) -> None:
        if self._env_step0 is None:
            self._env_step0 = env_step
        self.env_step, self.train_iter = env_step, train_iter
        now = time.time()
        if self.enabled and now - self._last_draw >= self.min_interval:
            self._last_draw = now
            set_status_line(self.line())

    def eval(self, eval_return: float) -> None:
        self.last_eval = eval_return

    def line(self) -> str:
        parts = []
        if self.max_env_step:
            frac = min(1.0, self.env_step / self.max_env_step)
            parts.append(f"env steps {self.env_step:,}/{self.max_env_step:,} {_bar(frac)}")
        else:
            parts.append(f"env steps {self.env_step:,}")
        parts.append(f"iter {self.train_iter:,}" + (f"/{self.max_train_iter:,}" if self.max_train_iter else ""))
        if self.last_eval is not None:
            target = f"/{self.stop_value:g}" if self.stop_value is not None else ""
            bar = _bar(max(0.0, min(1.0, self.last_eval / self.stop_value))) if self.stop_value else ""
            parts.append(f"eval {self.last_eval:.1f}{target} {bar}".rstrip())
        elapsed = max(time.time() - self._t0, 1e-9)
        parts.append(f"{(self.env_step - (self._env_step0 or 0)) / elapsed:,.0f} env steps/s overall")
        return " | ".join(parts)

    def close(self) -> None:
        if self.enabled:
            set_status_line(None)


def _bar(frac: float, width: int = 20) -> str:
    n = int(round(frac * width))
    return "[" + "#" * n + "." * (width - n) + "]"


class EvalCSV:
    """``<exp>/log/eval.csv``: one row per evaluation; what ``ding -m plot`` reads."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            atomic_write_text(path, ",".join(_EVAL_FIELDS) + "\n")

    def append(self, train_iter: int, env_step: int, mean: float, std: float, wall_time: float) -> None:
        """One row; ``wall_time`` is the run's training time so far in seconds (all sessions of a resumed run)."""
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([train_iter, env_step, f"{mean:.6g}", f"{std:.6g}", f"{wall_time:.3f}"])

    def truncate_after(self, train_iter: int) -> None:
        """Drop rows newer than ``train_iter`` (a resumed run re-creates them)."""
        rows = read_eval_csv(self.path)
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(_EVAL_FIELDS)
        for r in rows:
            if r["train_iter"] <= train_iter:
                w.writerow([int(r["train_iter"]), int(r["env_step"]), f"{r['eval_return_mean']:.6g}",
                            f"{r['eval_return_std']:.6g}", f"{r['wall_time']:.3f}"])  # as append() writes them
        atomic_write_text(self.path, buf.getvalue())


def read_eval_csv(path: str) -> list[dict[str, float]]:
    with open(path, newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


class BattleEvalCSV:
    """``<exp>/log/battle_eval.csv``: one row per evaluator and evaluation (win/draw/loss, the main player's Elo);
    what ``ding -m plot`` draws win rate and rating from."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            atomic_write_text(path, ",".join(BATTLE_EVAL_FIELDS) + "\n")

    def append(self, train_iter: int, env_step: int, name: str, stats: Any, rating: float, wall_time: float) -> None:
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([train_iter, env_step, name, f"{stats.return_mean:.6g}", stats.wins, stats.draws,
                                    stats.losses, f"{stats.win_rate:.6g}", f"{rating:.6g}", f"{wall_time:.3f}"])

    def truncate_after(self, train_iter: int) -> None:
        """Drop rows newer than ``train_iter`` (a resumed run writes them again)."""
        with open(self.path, newline="") as f:
            rows = list(csv.reader(f))
        kept = [rows[0]] + [r for r in rows[1:] if int(r[0]) <= train_iter]
        atomic_write_text(self.path, "".join(",".join(r) + "\n" for r in kept))


def read_battle_eval_csv(path: str) -> list[dict[str, Any]]:
    """The rows of a ``battle_eval.csv``: numbers as floats, ``evaluator`` as its name."""
    with open(path, newline="") as f:
        return [{k: (v if k == "evaluator" else float(v)) for k, v in row.items()} for row in csv.DictReader(f)]


_ENDINGS = {"stop_value": "reached the stop value", "interrupted": "interrupted",
            "closed": "closed before its end", "limit": "stopped at its limit (--train-iter / --env-step)",
            "hook": "stopped by a learner hook's stop request"}


def ending_words(stop_flag: bool, interrupted: bool, ended: str) -> str:
    """How a run's closing line says why it ended (``ended``: the reason its ``result`` file records)."""
    if stop_flag:
        return _ENDINGS["stop_value"]
    if interrupted:
        return _ENDINGS["interrupted"]
    return _ENDINGS.get(ended, f"ended ({ended})")
