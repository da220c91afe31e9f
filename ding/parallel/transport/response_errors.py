"""DI-engine's typed answers to a failed request (``ding.interaction.exception``): the error envelope of an
``HTTPError`` becomes the exception class of its code, in the master or the slave family."""
from __future__ import annotations

import enum
from typing import Any

from ding.parallel.transport.responses import get_values_from_response

_ENVELOPE_ERRORS = (ValueError, KeyError, TypeError, AttributeError)


class ResponseException(Exception):
    """A failed request's answer: ``status_code``, ``success``, ``code``, ``message`` and ``data`` of the error
    envelope that an ``HTTPError``'s response carries."""

    def __init__(self, error: Any) -> None:
        response = getattr(error, "response", None)
        if response is None:
            raise TypeError(f"{type(self).__name__}: expected a requests.HTTPError with a response, got {error!r}")
        try:
            values = get_values_from_response(response)
        except _ENVELOPE_ERRORS as e:
            raise ValueError(f"{type(self).__name__}: the response (HTTP {getattr(response, 'status_code', '?')}) "
                             "does not carry the envelope {'success', 'code', 'message', 'data'}") from e
        self.error = error
        self.status_code, self.success, self.code, self.message, self.data = values
        super().__init__(self.message)


@enum.unique
class MasterErrorCode(enum.IntEnum):
    SUCCESS = 0
    SYSTEM_SHUTTING_DOWN = 101
    CHANNEL_NOT_GIVEN = 201
    CHANNEL_INVALID = 202
    MASTER_TOKEN_NOT_GIVEN = 301  # a slave's connection request
    MASTER_TOKEN_INVALID = 302
    SELF_TOKEN_NOT_GIVEN = 401  # a request to the master itself (ping, shutdown)
    SELF_TOKEN_INVALID = 402
    SLAVE_TOKEN_NOT_GIVEN = 501  # a slave's service request
    SLAVE_TOKEN_INVALID = 502
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


@enum.unique
class SlaveErrorCode(enum.IntEnum):
    SUCCESS = 0
    SYSTEM_SHUTTING_DOWN = 101
    CHANNEL_NOT_FOUND = 201
    CHANNEL_INVALID = 202
    MASTER_TOKEN_NOT_FOUND = 301  # a master's request
    MASTER_TOKEN_INVALID = 302
    SELF_TOKEN_NOT_FOUND = 401  # a request to the slave itself (ping, shutdown)
    SELF_TOKEN_INVALID = 402
    SLAVE_ALREADY_CONNECTED = 501  # to another master
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


def _class_of(family: str, codes: type[enum.IntEnum], code: Any) -> Any:
    """The class of ``code``: the family's name + the code's name in CamelCase (``MasterTaskDataInvalid``)."""
    try:
        member = codes(code)
    except ValueError:
        raise ValueError(f"unknown {family.lower()} error code {code!r}; known: "
                         f"{', '.join(str(int(c)) for c in codes)}") from None
    return globals()[family + member.name.title().replace("_", "")]


def _exception_of(family: str, codes: type[enum.IntEnum], base: type[ResponseException], error: Any) -> Any:
    """The exception of the code in ``error``'s envelope; an unknown code (or none) gives the family's ``base``."""
    try:
        cls = _class_of(family, codes, get_values_from_response(error.response)[2])
    except _ENVELOPE_ERRORS:
        cls = base
    return cls(error)


def get_master_exception_class_by_error_code(error_code: MasterErrorCode | int) -> type[MasterResponseException]:
    return _class_of("Master", MasterErrorCode, error_code)


def get_slave_exception_class_by_error_code(error_code: SlaveErrorCode | int) -> type[SlaveResponseException]:
    return _class_of("Slave", SlaveErrorCode, error_code)


def get_master_exception_by_error(error: Any) -> MasterResponseException:
    """The exception of the code in a DI-engine master's error answer (a ``requests.HTTPError``)."""
    return _exception_of("Master", MasterErrorCode, MasterResponseException, error)


def get_slave_exception_by_error(error: Any) -> SlaveResponseException:
    """The exception of the code in a DI-engine slave's error answer (a ``requests.HTTPError``)."""
    return _exception_of("Slave", SlaveErrorCode, SlaveResponseException, error)


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
