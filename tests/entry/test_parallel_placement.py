"""The launcher's view of its process tree for the CPU placement governor: which processes train."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ding.entry.parallel_entry import _RunTree


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="pinning needs Linux and two CPUs")
def test_a_process_pinned_to_a_trainers_cpu_trains_whatever_its_name():
    """A learner0 that trains in its own process keeps its role's name (``ding-learner0``): the governor must still
    count it as a trainer (and never move it off its core), by the CPUs it pinned itself to."""
    cpu = max(os.sched_getaffinity(0))
    code = (f"import os, sys, time; os.sched_setaffinity(0, {{{cpu}}}); sys.stdout.write('ready\\n'); "
            "sys.stdout.flush(); time.sleep(30)")
    pinned = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    free = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pinned.stdout is not None and pinned.stdout.readline().strip() == "ready"
        tree = _RunTree([frozenset({cpu})])
        deadline = time.monotonic() + 10
        while free.pid not in tree.others() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pinned.pid in tree.trainers() and pinned.pid not in tree.others()
        assert free.pid in tree.others() and os.getpid() in tree.others()
    finally:
        for p in (pinned, free):
            p.kill()
            p.wait()
