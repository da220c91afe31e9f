"""DI-engine's typed answers to a failed request (``ding.interaction.exception``): an HTTP error whose body is the
envelope ``{"success", "code", "message", "data"}`` becomes one exception class per error code, in a master family
(:class:`MasterErrorCode`, what a DI-engine master answers) and a slave family (:class:`SlaveErrorCode`).

``get_master_exception_by_error(err)`` / ``get_slave_exception_by_error(err)`` take the ``requests.HTTPError`` and
return the exception of its code, which carries the response's ``status_code``, ``success``, ``code``, ``message``
and ``data``. Ding's own master and slave answer with HTTP status codes instead (``RequestRejected.code``).
"""
from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

from ding.parallel.transport.responses import get_values_from_response


class ResponseException(Exception):
    """A failed request's answer: the fields of the error envelope an ``HTTPError``'s response carries."""

    def __init__(self, error: Any) -> None:
        response = getattr(error, "response", None)
        if response is None:
            raise TypeError(f"{type(self).__name__}: expected a requests.HTTPError with a response, got {error!r}")
        try:
            values = get_values_from_response(response)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{type(self).__name__}: the response (HTTP {getattr(response, 'status_code', '?')}) "
                             "does not carry the envelope {'success', 'code', 'message', 'data'}") from e
        self.error = error
        self._status_code, self._success, self._code, self._message, data = values
        self._data: Mapping[str, Any] = data if data is not None else {}
        super().__init__(self._message)

    @property
    def status_code(self) -> int:
        return self._status_code

    @property
    def success(self) -> bool:
        return self._success

    @property
    def code(self) -> int:
        return self._code

    @property
    def message(self) -> str:
        return self._message

    @property
    def data(self) -> Mapping[str, Any]:
        return self._data


@enum.unique
class MasterErrorCode(enum.IntEnum):
    SUCCESS = 0
    SYSTEM_SHUTTING_DOWN = 101
    CHANNEL_NOT_GIVEN = 201  # the request carries no channel id
    CHANNEL_INVALID = 202  # the channel id is not the master's
    MASTER_TOKEN_NOT_GIVEN = 301  # a slave's connection request carries no master token
    MASTER_TOKEN_INVALID = 302
    SELF_TOKEN_NOT_GIVEN = 401  # a request to the master itself (ping, shutdown) carries no token
    SELF_TOKEN_INVALID = 402
    SLAVE_TOKEN_NOT_GIVEN = 501  # a slave's service request carries no slave token
    SLAVE_TOKEN_INVALID = 502  # the master knows no slave with that token
    TASK_DATA_INVALID = 601


class MasterResponseException(ResponseException):
    """The answer of a DI-engine master to a failed request (the family's base; an unknown code gives this)."""


class MasterSuccess(MasterResponseException): ...
class MasterSystemShuttingDown(MasterResponseException): ...
class MasterChannelNotGiven(MasterResponseException): ...
class MasterChannelInvalid(MasterResponseException): ...
class MasterMasterTokenNotGiven(MasterResponseException): ...
class MasterMasterTokenInvalid(MasterResponseException): ...
class MasterSelfTokenNotGiven(MasterResponseException): ...
class MasterSelfTokenInvalid(MasterResponseException): ...
class MasterSlaveTokenNotGiven(MasterResponseException): ...
class MasterSlaveTokenInvalid(MasterResponseException): ...
class MasterTaskDataInvalid(MasterResponseException): ...


_MASTER_CLASSES: dict[MasterErrorCode, type[MasterResponseException]] = {
    MasterErrorCode.SUCCESS: MasterSuccess,
    MasterErrorCode.SYSTEM_SHUTTING_DOWN: MasterSystemShuttingDown,
    MasterErrorCode.CHANNEL_NOT_GIVEN: MasterChannelNotGiven,
    MasterErrorCode.CHANNEL_INVALID: MasterChannelInvalid,
    MasterErrorCode.MASTER_TOKEN_NOT_GIVEN: MasterMasterTokenNotGiven,
    MasterErrorCode.MASTER_TOKEN_INVALID: MasterMasterTokenInvalid,
    MasterErrorCode.SELF_TOKEN_NOT_GIVEN: MasterSelfTokenNotGiven,
    MasterErrorCode.SELF_TOKEN_INVALID: MasterSelfTokenInvalid,
    MasterErrorCode.SLAVE_TOKEN_NOT_GIVEN: MasterSlaveTokenNotGiven,
    MasterErrorCode.SLAVE_TOKEN_INVALID: MasterSlaveTokenInvalid,
    MasterErrorCode.TASK_DATA_INVALID: MasterTaskDataInvalid,
}


@enum.unique
class SlaveErrorCode(enum.IntEnum):
    SUCCESS = 0
    SYSTEM_SHUTTING_DOWN = 101
    CHANNEL_NOT_FOUND = 201  # the request carries no channel id
    CHANNEL_INVALID = 202  # the channel id is not the slave's
    MASTER_TOKEN_NOT_FOUND = 301  # a master's request carries no master token
    MASTER_TOKEN_INVALID = 302
    SELF_TOKEN_NOT_FOUND = 401  # a request to the slave itself (ping, shutdown) carries no token
    SELF_TOKEN_INVALID = 402
    SLAVE_ALREADY_CONNECTED = 501  # the slave is connected to another master
    SLAVE_NOT_CONNECTED = 502
    SLAVE_CONNECTION_REFUSED = 503
    SLAVE_DISCONNECTION_REFUSED = 504
    TASK_ALREADY_EXIST = 601  # the slave is running another task
    TASK_REFUSED = 602


class SlaveResponseException(ResponseException):
    """The answer of a DI-engine slave to a failed request (the family's base; an unknown code gives this)."""


class SlaveSuccess(SlaveResponseException): ...
class SlaveSystemShuttingDown(SlaveResponseException): ...
class SlaveChannelNotFound(SlaveResponseException): ...
class SlaveChannelInvalid(SlaveResponseException): ...
class SlaveMasterTokenNotFound(SlaveResponseException): ...
class SlaveMasterTokenInvalid(SlaveResponseException): ...
class SlaveSelfTokenNotFound(SlaveResponseException): ...
class SlaveSelfTokenInvalid(SlaveResponseException): ...
class SlaveSlaveAlreadyConnected(SlaveResponseException): ...
class SlaveSlaveNotConnected(SlaveResponseException): ...
class SlaveSlaveConnectionRefused(SlaveResponseException): ...
class SlaveSlaveDisconnectionRefused(SlaveResponseException): ...
class SlaveTaskAlreadyExist(SlaveResponseException): ...
class SlaveTaskRefused(SlaveResponseException): ...


_SLAVE_CLASSES: dict[SlaveErrorCode, type[SlaveResponseException]] = {
    SlaveErrorCode.SUCCESS: SlaveSuccess,
    SlaveErrorCode.SYSTEM_SHUTTING_DOWN: SlaveSystemShuttingDown,
    SlaveErrorCode.CHANNEL_NOT_FOUND: SlaveChannelNotFound,
    SlaveErrorCode.CHANNEL_INVALID: SlaveChannelInvalid,
    SlaveErrorCode.MASTER_TOKEN_NOT_FOUND: SlaveMasterTokenNotFound,
    SlaveErrorCode.MASTER_TOKEN_INVALID: SlaveMasterTokenInvalid,
    SlaveErrorCode.SELF_TOKEN_NOT_FOUND: SlaveSelfTokenNotFound,
    SlaveErrorCode.SELF_TOKEN_INVALID: SlaveSelfTokenInvalid,
    SlaveErrorCode.SLAVE_ALREADY_CONNECTED: SlaveSlaveAlreadyConnected,
    SlaveErrorCode.SLAVE_NOT_CONNECTED: SlaveSlaveNotConnected,
    SlaveErrorCode.SLAVE_CONNECTION_REFUSED: SlaveSlaveConnectionRefused,
    SlaveErrorCode.SLAVE_DISCONNECTION_REFUSED: SlaveSlaveDisconnectionRefused,
    SlaveErrorCode.TASK_ALREADY_EXIST: SlaveTaskAlreadyExist,
    SlaveErrorCode.TASK_REFUSED: SlaveTaskRefused,
}


def get_master_exception_class_by_error_code(error_code: MasterErrorCode | int) -> type[MasterResponseException]:
    try:
        return _MASTER_CLASSES[MasterErrorCode(error_code)]
    except ValueError:
        raise ValueError(f"unknown master error code {error_code!r}; known: "
                         f"{', '.join(str(int(c)) for c in MasterErrorCode)}") from None


def get_slave_exception_class_by_error_code(error_code: SlaveErrorCode | int) -> type[SlaveResponseException]:
    try:
        return _SLAVE_CLASSES[SlaveErrorCode(error_code)]
    except ValueError:
        raise ValueError(f"unknown slave error code {error_code!r}; known: "
                         f"{', '.join(str(int(c)) for c in SlaveErrorCode)}") from None


def _envelope_code(error: Any) -> Any:
    """The ``code`` of the envelope an HTTP error's response carries (None without one)."""
    response = getattr(error, "response", None)
    content = getattr(response, "content", None)
    if content is None:
        content = getattr(response, "data", b"")
    if not isinstance(content, (bytes, bytearray, str)):
        return None
    try:
        body = json.loads(content)
    except ValueError:
        return None
    return body.get("code") if isinstance(body, dict) else None


def get_master_exception_by_error(error: Any) -> MasterResponseException:
    """The exception of the code in a DI-engine master's error answer (``requests.HTTPError``); an unknown code
    gives the family's base :class:`MasterResponseException`."""
    try:
        cls = _MASTER_CLASSES[MasterErrorCode(_envelope_code(error))]
    except (ValueError, TypeError):
        cls = MasterResponseException
    return cls(error)


def get_slave_exception_by_error(error: Any) -> SlaveResponseException:
    """The exception of the code in a DI-engine slave's error answer (``requests.HTTPError``); an unknown code
    gives the family's base :class:`SlaveResponseException`."""
    try:
        cls = _SLAVE_CLASSES[SlaveErrorCode(_envelope_code(error))]
    except (ValueError, TypeError):
        cls = SlaveResponseException
    return cls(error)


__all__ = [
    "ResponseException",
    "MasterErrorCode", "MasterResponseException", "MasterSuccess", "MasterSystemShuttingDown", "MasterChannelNotGiven",
    "MasterChannelInvalid", "MasterMasterTokenNotGiven", "MasterMasterTokenInvalid", "MasterSelfTokenNotGiven",
    "MasterSelfTokenInvalid", "MasterSlaveTokenNotGiven", "MasterSlaveTokenInvalid", "MasterTaskDataInvalid",
    "get_master_exception_class_by_error_code", "get_master_exception_by_error",
    "SlaveErrorCode", "SlaveResponseException", "SlaveSuccess", "SlaveSystemShuttingDown", "SlaveChannelNotFound",
    "SlaveChannelInvalid", "SlaveMasterTokenNotFound", "SlaveMasterTokenInvalid", "SlaveSelfTokenNotFound",
    "SlaveSelfTokenInvalid", "SlaveSlaveAlreadyConnected", "SlaveSlaveNotConnected", "SlaveSlaveConnectionRefused",
    "SlaveSlaveDisconnectionRefused", "SlaveTaskAlreadyExist", "SlaveTaskRefused",
    "get_slave_exception_class_by_error_code", "get_slave_exception_by_error",
]
