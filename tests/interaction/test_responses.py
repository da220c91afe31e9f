"""DI-engine's Flask response helpers and slave-side exceptions: the envelope they build and read, and a task handler
raising ``TaskFail`` failing its task on a real master with the result it carried."""
from __future__ import annotations

import flask
import pytest

from ding.parallel.transport import Master, Slave, TaskFail, TaskFailed, failure_response, success_response
from ding.parallel.transport.base import ResponsibleException, TaskRefuse, get_values_from_response

TOKEN = "responses-test-token-0123456789"


def test_success_and_failure_responses_carry_the_envelope():
    app = flask.Flask("t")
    with app.test_request_context():
        ok = success_response(data={"a": 1})
        bad = failure_response(code=7, message="nope", data={"why": "x"})
        refused, status = TaskRefuse({"busy": True}).get_response()
    assert get_values_from_response(ok) == (200, True, 0, "Success.", {"a": 1})
    assert get_values_from_response(bad) == (200, False, 7, "nope", {"why": "x"})
    assert status == 403 and get_values_from_response(refused)[1:] == (False, 1301, "Task refused.", {"busy": True})
    assert isinstance(TaskRefuse(), ResponsibleException)


def test_task_fail_fails_the_task_with_its_result():
    def picky(payload):
        raise TaskFail({"reason": "bad level", "level": payload["level"]}, "level refused")

    master = Master("coordinator", token=TOKEN, heartbeat_timeout=2.0)
    slave = Slave("collector0", "collector", token=TOKEN, handlers={"picky": picky}, heartbeat_interval=0.1)
    master.start()
    slave.start()
    try:
        conn = master.connect("collector0", "127.0.0.1", slave.port, role="collector")
        handle = master.new_task(conn, "picky", {"level": 3}, deadline_s=5)
        with pytest.raises(TaskFailed, match="level refused") as info:
            handle.result(timeout=5)
        assert info.value.result == {"reason": "bad level", "level": 3}
    finally:
        master.close()
        slave.close()
