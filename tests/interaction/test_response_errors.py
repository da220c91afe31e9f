"""DI-engine's error-code exceptions at ding.interaction.exception: an HTTP error's envelope becomes the class of its
code, in the master and the slave family."""
import json

import pytest

requests = pytest.importorskip("requests")

from ding.interaction.exception import (  # noqa: E402
    MasterErrorCode,
    MasterResponseException,
    MasterTaskDataInvalid,
    ResponseException,
    SlaveErrorCode,
    SlaveResponseException,
    SlaveTaskRefused,
    get_master_exception_by_error,
    get_slave_exception_by_error,
)
from ding.interaction.exception.master import get_master_exception_class_by_error_code  # noqa: E402
from ding.interaction.exception.slave import get_slave_exception_class_by_error_code  # noqa: E402


def _http_error(body, status=400):
    response = requests.Response()
    response.status_code = status
    response._content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return requests.HTTPError(response=response)


def _envelope(code, message="m", data=None):
    return {"success": False, "code": code, "message": message, "data": data or {}}


def test_each_code_has_its_own_class_in_its_family():
    master = {get_master_exception_class_by_error_code(c) for c in MasterErrorCode}
    slave = {get_slave_exception_class_by_error_code(c) for c in SlaveErrorCode}
    assert len(master) == len(MasterErrorCode) == 11 and len(slave) == len(SlaveErrorCode) == 14
    assert all(issubclass(c, MasterResponseException) and c is not MasterResponseException for c in master)
    assert all(issubclass(c, SlaveResponseException) and c is not SlaveResponseException for c in slave)
    assert get_master_exception_class_by_error_code(601) is MasterTaskDataInvalid  # a plain int works too
    with pytest.raises(ValueError, match="unknown slave error code 999"):
        get_slave_exception_class_by_error_code(999)


def test_the_exception_carries_the_envelope():
    err = get_slave_exception_by_error(_http_error(_envelope(602, "Task refused.", {"value": 233}), status=403))
    assert isinstance(err, SlaveTaskRefused) and isinstance(err, ResponseException)
    assert (err.status_code, err.success, err.code, err.message, err.data) == (
        403, False, 602, "Task refused.", {"value": 233})
    assert str(err) == "Task refused."
    err = get_master_exception_by_error(_http_error(_envelope(601)))
    assert isinstance(err, MasterTaskDataInvalid) and err.data == {}


def test_an_unknown_code_gives_the_family_base():
    err = get_master_exception_by_error(_http_error(_envelope(777, "odd")))
    assert type(err) is MasterResponseException and err.code == 777 and err.message == "odd"


def test_an_answer_without_the_envelope_is_refused():
    with pytest.raises(ValueError, match="does not carry the envelope"):
        get_master_exception_by_error(_http_error("<html>bad gateway</html>", status=502))
    with pytest.raises(TypeError, match="HTTPError with a response"):
        ResponseException(RuntimeError("no response"))
