"""DI-engine's small interaction helpers at ding.interaction.base / .config: responsible, random_token,
translate_dict_func, default_func, ControllableService, DblEvent, the host constants."""
import string
import threading

import pytest

from ding.interaction.base import (
    ControllableService,
    DblEvent,
    ResponsibleException,
    TaskRefuse,
    default_func,
    get_values_from_response,
    random_token,
    responsible,
    translate_dict_func,
)
from ding.interaction.config import GLOBAL_HOST, LOCAL_HOST


def test_responsible_turns_the_exception_into_its_response_and_lets_others_through():
    flask = pytest.importorskip("flask")
    app = flask.Flask("t")

    @app.route("/refuse")
    @responsible()
    def refuse():
        raise TaskRefuse({"why": "busy"})

    @app.route("/boom")
    @responsible(classes=[TaskRefuse])
    def boom():
        raise ResponsibleException(message="not caught here")

    client = app.test_client()
    status, success, code, message, data = get_values_from_response(client.get("/refuse"))
    assert (status, success, code, data) == (403, False, 1301, {"why": "busy"})
    app.config["PROPAGATE_EXCEPTIONS"] = True
    with pytest.raises(ResponsibleException, match="not caught here"):
        client.get("/boom")
    with pytest.raises(TypeError, match="ResponsibleException"):
        responsible(classes=[ValueError])


def test_random_token_translate_dict_func_default_func():
    assert len(random_token()) == 64 and len(random_token(10)) == 10 and random_token(0) == ""
    assert set(random_token(200)) <= set(string.hexdigits)
    assert random_token() != random_token()
    with pytest.raises(ValueError, match="length"):
        random_token(-1)
    f = translate_dict_func({"sum": lambda a, b: a + b, "diff": lambda a, b: a - b})
    assert f(5, 2) == {"sum": 7, "diff": 3}
    assert default_func(7)(None)(1, x=2) == 7
    assert default_func()(None)() is None
    assert default_func(7)(lambda a: a * 2)(4) == 8


def test_controllable_service_closes_by_shutdown_then_join():
    calls = []

    class Service(ControllableService):
        def start(self):
            calls.append("start")

        def shutdown(self):
            calls.append("shutdown")

        def join(self):
            calls.append("join")

    with Service() as s:
        assert isinstance(s, Service) and calls == ["start"]
    assert calls == ["start", "shutdown", "join"]
    with pytest.raises(TypeError):
        ControllableService()


def test_dbl_event_states_and_waits():
    e = DblEvent()
    assert e.is_close() and not e.is_open()
    assert not e.wait_for_open(timeout=0.01)
    opener = threading.Timer(0.05, e.open)
    opener.start()
    try:
        assert e.wait_for_open(timeout=5.0) and e.is_open() and not e.is_close()
    finally:
        opener.join()
    e.close()
    assert e.wait_for_close(timeout=0.01) and not e.is_open()
    assert DblEvent(opened=True).is_open()


def test_host_constants():
    assert (GLOBAL_HOST, LOCAL_HOST) == ("0.0.0.0", "127.0.0.1")
