"""PolicySnapshots: a byte copy of the published policy per evaluation split over collectors, so that every shard
loads the same policy whatever the learner publishes meanwhile. ``path_policy/<policy_id>.eval<N>`` is written
atomically and deleted when its evaluation ends (the best one is first kept as the run's ``ckpt_best.pth.tar``).
"""
from __future__ import annotations

import contextlib
import itertools
import logging
import os

from ding.parallel.files import POLICY_MAX_BYTES, policy_path, read_policy
from ding.utils import DataFileError, atomic_write, read_regular_file, torch_save_atomic
from ding.worker.learner.checkpoint import COLLECTOR_CKPT_DIR


class PolicySnapshots:
    def __init__(self, path_policy: str, exp_name: str, logger: logging.Logger) -> None:
        self._dir = path_policy
        self._exp_name = exp_name
        self._logger = logger
        self._count = itertools.count()
        self._taken: set[str] = set()

    def take(self, policy_id: str) -> str | None:
        """Copy the live policy file to a new snapshot; its id, or None when there is no policy file to copy."""
        try:  # a regular file only, bounded (never a FIFO or a link: this runs under the commander's lock)
            data = read_regular_file(policy_path(self._dir, policy_id), POLICY_MAX_BYTES, what="policy file")
        except (OSError, DataFileError) as e:
            self._logger.warning(f"no policy snapshot for an evaluation ({e}); it runs on one collector")
            return None
        snapshot = f"{policy_id}.eval{next(self._count)}"
        atomic_write(policy_path(self._dir, snapshot), data, fsync=False)
        self._taken.add(snapshot)
        return snapshot

    def drop(self, snapshot: str, best: bool = False) -> None:
        """Delete a snapshot whose evaluation ended; ``best``: keep it first as the run's best evaluated policy
        (``<exp>/collector_ckpt/ckpt_best.pth.tar``, what a collector writes for an evaluation it ran whole)."""
        path = policy_path(self._dir, snapshot)
        if best:
            try:
                state = read_policy(path)
            except DataFileError as e:
                self._logger.warning(f"the best evaluated policy was not kept: {e}")
                state = None
            if state is not None:
                torch_save_atomic({"model": state["model"], "last_iter": state["iter"]},
                                  os.path.join(self._exp_name, COLLECTOR_CKPT_DIR, "ckpt_best.pth.tar"))
        self._taken.discard(snapshot)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def sweep(self) -> None:
        """Delete every snapshot still there (evaluations cut short by the end of the run)."""
        for snapshot in list(self._taken):
            self.drop(snapshot)
