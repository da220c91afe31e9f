"""Logging shared by the workers (learner, collectors, evaluators): a timestamped text log per worker, a compact
console view, and a TensorBoard writer."""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

from .lock import guard_run_dir
from .log_helper import ConsoleStream, build_tb_writer, close_logger, get_text_logger

CONSOLE = {"console": True}  # pass as ``extra=CONSOLE`` to also print a record to stdout


class _ConsoleOnly(logging.Filter):
    """Let through only the records logged with ``extra=CONSOLE``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return bool(getattr(record, "console", False))


def build_worker_logger(exp_name: str, instance_name: str, log_dir: str | None = None) -> logging.Logger:
    """Logger writing every record to ``<log_dir>/<instance_name>_logger.txt`` (default log_dir:
    ``./<exp_name>/log/<instance_name>``).

    Records logged with ``extra=CONSOLE`` are also printed to stdout as the bare message (the compact console view of
    the run: one line per evaluation, one per ``log_show`` interval).
    """
    log_dir = log_dir or os.path.join(".", exp_name, "log", instance_name)
    path = os.path.join(log_dir, f"{instance_name}_logger.txt")
    logger = get_text_logger(path, f"{exp_name}.{instance_name}")
    console = logging.StreamHandler(ConsoleStream())  # stdout, below any progress line
    console.setFormatter(logging.Formatter("%(message)s"))
    console.addFilter(_ConsoleOnly())
    logger.addHandler(console)
    return logger


def build_tb_logger(exp_name: str, instance_name: str, log_dir: str | None = None) -> Any:
    """A tensorboardX writer at ``log_dir`` (default ``./<exp_name>/log/<instance_name>/``) for a worker that was
    not given one."""
    return build_tb_writer(log_dir or os.path.join(".", exp_name, "log", instance_name))


def close_worker_logger(logger: logging.Logger) -> None:
    close_logger(logger)


class WorkerLogs:
    """A worker's text logger and TensorBoard writer: the given ``tb_logger``, or one of its own (``own_tb``).

    ``close()`` flushes the writer, closes it only if the worker made it, and closes the text log.
    """

    def __init__(self, exp_name: str, instance_name: str, tb_logger: Any = None, make_tb: bool = True,
                 log_dir: str | None = None) -> None:
        if log_dir is None:  # it writes under ./<exp_name>/: that must be this run's directory
            guard_run_dir(exp_name, f"{instance_name} (exp_name={exp_name!r})")
        self.logger = build_worker_logger(exp_name, instance_name, log_dir)
        self.own_tb = tb_logger is None and make_tb
        self.tb_logger = build_tb_logger(exp_name, instance_name, log_dir) if self.own_tb else tb_logger
        self._closed = False
        self._close_lock = threading.Lock()

    def close(self) -> None:
        """Idempotent (a coordinator that failed to start is closed by its error path and its shutdown thread)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self.tb_logger is not None:
            self.tb_logger.flush()
            if self.own_tb:
                self.tb_logger.close()
        close_worker_logger(self.logger)
