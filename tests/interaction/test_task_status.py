"""DI-engine's TaskStatus (ding.interaction.master.task) read from a task handle: STARTED, then COMPLETED / FAILED."""
from __future__ import annotations

import threading

import pytest

from ding.interaction import TaskFailed
from ding.interaction.master import Master
from ding.interaction.master.task import TaskStatus
from ding.interaction.slave import Slave, TaskFail

TOKEN = "s" * 32


def test_a_handle_reads_started_then_completed_or_failed():
    release = threading.Event()

    def wait(p):
        release.wait(10)
        return {"ok": 1}

    def refuse(p):
        raise TaskFail({"why": "no"}, "refused on purpose")

    master = Master("coordinator", token=TOKEN)
    slave = Slave("learner0", "learner", token=TOKEN, handlers={"wait": wait, "refuse": refuse})
    master.start()
    slave.start()
    try:
        conn = master.connect("learner0", "127.0.0.1", slave.port, role="learner")
        running = master.new_task(conn, "wait", {})
        assert running.status is TaskStatus.STARTED
        release.set()
        assert running.result(timeout=10) == {"ok": 1}
        assert running.status is TaskStatus.COMPLETED
        failing = master.new_task(conn, "refuse", {})
        with pytest.raises(TaskFailed) as info:
            failing.result(timeout=10)
        assert info.value.result == {"why": "no"}
        assert failing.status is TaskStatus.FAILED
    finally:
        release.set()
        master.close()
        slave.close()
