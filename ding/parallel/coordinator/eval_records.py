"""EvalRecords: every evaluation of the run, reported once.

The commander keeps the run's evaluation history (an evaluation split over collectors enters it once, when its last
shard is in). Each new record goes to TensorBoard, to the console, and to the ``on_eval`` observer, with the run's
wall time; after each, the replay buffers are saved (at most every ``BUFFER_SAVE_INTERVAL_S``) for ``--resume``.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ding.parallel.protocol import EvalRecord
from ding.utils.worker_logs import CONSOLE


class EvalRecords:
    def __init__(self, commander: Any, logger: logging.Logger, tb: Any, start_time: float,
                 on_eval: Callable[[EvalRecord], None] | None, after_each: Callable[[], None]) -> None:
        self._commander = commander
        self._logger, self._tb = logger, tb
        self._start_time = start_time
        self._on_eval = on_eval
        self._after_each = after_each
        self._lock = threading.Lock()
        self._recorded = 0  # records of the commander's history already reported

    def skip_recorded(self) -> None:
        """The history holds a resumed run's evaluations: they were reported by the run that made them."""
        with self._lock:
            self._recorded = len(self._commander.eval_history)

    def report_new(self) -> None:
        with self._lock:
            history = self._commander.eval_history
            new, self._recorded = history[self._recorded:], len(history)
        for record in new:
            self._report(dataclasses.replace(record, wall_time=time.monotonic() - self._start_time))

    def _report(self, record: EvalRecord) -> None:
        it, step = record.train_iter, record.env_step
        self._tb.add_scalar("evaluator_step/eval_episode_return_mean", record.eval_return_mean, step)
        self._tb.add_scalar("evaluator_iter/eval_episode_return_mean", record.eval_return_mean, it)
        won = "" if record.win_rate is None else f" | win rate {record.win_rate:.0%}"
        self._logger.info(f"[eval] iter {it:,} | env steps {step:,} | return {record.eval_return_mean:.4g} ± "
                          f"{record.eval_return_std:.3g}{won} | {record.wall_time:.1f} s", extra=CONSOLE)
        self._after_each()
        if self._on_eval is not None:
            self._on_eval(record)
