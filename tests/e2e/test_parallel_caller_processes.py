"""Issue 36 item 16: a parallel run started from Python (``parallel_pipeline``, e.g. in a notebook) leaves the
caller's other processes and the caller itself alone: their CPU affinity and priority are what they were, during the
run and after it (the deleted placement governor once moved every descendant of the caller)."""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import threading

import pytest

from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import create_config, main_config, system_config

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")]


def _placement(pid: int) -> tuple[frozenset[int], int]:
    return frozenset(os.sched_getaffinity(pid)), os.getpriority(os.PRIO_PROCESS, pid)


def test_parallel_pipeline_leaves_the_callers_other_children_and_itself_alone(in_tmp_dir):
    from ding.entry.parallel_entry import parallel_pipeline

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # e.g. a notebook's kernel job
    try:
        before_other, before_self = _placement(other.pid), _placement(os.getpid())
        seen: set[tuple[tuple[frozenset[int], int], tuple[frozenset[int], int]]] = set()
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                seen.add((_placement(other.pid), _placement(os.getpid())))
                stop.wait(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        main, create, system = (copy.deepcopy(c) for c in (main_config, create_config, system_config))
        main.exp_name = "caller_alone"
        main.env.stop_value = 1e9
        system.path_data = system.path_policy = None  # under ./<exp_name>/
        result = parallel_pipeline((main, create, system), seed=0, max_train_iter=60)
        stop.set()
        watcher.join(timeout=5)
        assert result["error"] is None and result["train_iter"] >= 60, result
        assert seen == {(before_other, before_self)}, seen
        assert _placement(other.pid) == before_other and _placement(os.getpid()) == before_self
    finally:
        other.kill()
        other.wait(timeout=10)
