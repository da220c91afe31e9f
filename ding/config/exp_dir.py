"""Claiming an experiment directory: creating it is the claim, so two runs never share one."""
from __future__ import annotations

import datetime
import logging
import os

from ding.utils import ConfigError, DirLock

logger = logging.getLogger(__name__)


def claim_exp_dir(exp_dir: str, announce: bool = True) -> str:
    """Create ``exp_dir`` and return it; if it exists, create and return ``<exp_dir>_<YYMMDD_HHMMSS>`` instead.

    ``os.mkdir`` succeeds for exactly one process, so two runs started at the same moment with one name end in two
    directories (``_1``, ``_2``, ... are appended when the timestamped name is taken too). ``announce=False``: the
    caller announces a new name with :func:`announce_exp_dir` once its run is set up (a set-up that fails removes
    the directory again, and an announced directory that is gone misleads).
    """
    exp_dir = os.fspath(exp_dir)
    parent = os.path.dirname(exp_dir.rstrip("/\\"))
    if parent:
        os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(exp_dir)
        return exp_dir
    except FileExistsError:
        pass
    fresh = _claim_fresh_dir(exp_dir)
    if announce:
        announce_exp_dir(exp_dir, fresh)
    return fresh


def announce_exp_dir(asked: str, got: str) -> None:
    """One warning line when a run got another directory than the one its config names (that one existed)."""
    if os.path.normpath(asked) != os.path.normpath(got):
        logger.warning("experiment directory '%s' already exists (an earlier run's); this run uses '%s'", asked, got)


def claim_run_dir(exp_name: str) -> DirLock:
    """Claim a new run directory (``exp_name``, or ``<exp_name>_<YYMMDD_HHMMSS>`` when that exists) and lock it, as
    the pipelines do; for workers built by hand. Returns the held :class:`DirLock` (``.path`` is the directory);
    ``with claim_run_dir(name) as run:`` releases it at the end, and the OS does when the process exits."""
    return DirLock(claim_exp_dir(exp_name), what="run").acquire()


def _claim_fresh_dir(exp_dir: str) -> str:
    base = exp_dir.rstrip("/\\") + datetime.datetime.now().strftime("_%y%m%d_%H%M%S")
    for i in range(1000):
        candidate = f"{base}_{i}" if i else base
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate
    raise ConfigError(f"cannot find a free experiment directory name next to '{exp_dir}'; clean up old runs")
