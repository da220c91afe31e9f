"""DI-engine's helpers for Flask handlers (the envelope as a Flask response and back) and its slave-side exceptions,
over ding's JSON envelope."""
from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ding.parallel.transport.base import envelope


@enum.unique
class CommonErrorCode(enum.IntEnum):
    SUCCESS = 0
    COMMON_FAILURE = 1


def flask_response(success: bool, data: Mapping[str, Any] | None = None, message: str | None = None,
                   code: int | None = None) -> Any:
    """The envelope as a Flask JSON response (needs an application or request context)."""
    import flask

    code = 0 if success else (code or CommonErrorCode.COMMON_FAILURE)
    message = message or ("Success." if success else "Failed.")
    return flask.jsonify(envelope(success, int(code), message, data))


def success_response(data: Mapping[str, Any] | None = None, message: str | None = None) -> Any:
    return flask_response(success=True, code=CommonErrorCode.SUCCESS, message=message, data=data)


def failure_response(code: int | None = None, message: str | None = None,
                     data: Mapping[str, Any] | None = None) -> Any:
    return flask_response(success=False, code=code or CommonErrorCode.COMMON_FAILURE, message=message, data=data)


def get_values_from_response(response: Any) -> tuple[int, bool, int, str, Mapping[str, Any]]:
    """``(status_code, success, code, message, data)`` of a Flask or ``requests`` response carrying the envelope."""
    content = response.content if hasattr(response, "content") else response.data
    body = json.loads(content.decode())
    return response.status_code, body["success"], body["code"], body.get("message", ""), body.get("data", {}) or {}


class ResponsibleException(Exception):
    """An error that answers the request: ``get_response()`` is the failure envelope with ``status_code``."""

    def __init__(self, code: int = CommonErrorCode.COMMON_FAILURE, message: str | None = None,
                 data: Mapping[str, Any] | None = None, status_code: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status_code = code, message, dict(data or {}), status_code

    def get_response(self) -> tuple[Any, int]:
        return failure_response(self.code, self.message, self.data), self.status_code


def responsible(classes: Iterable[type[ResponsibleException]] | None = None
                ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a Flask handler so that a raised :class:`ResponsibleException` (or one of ``classes``) answers with
    its ``get_response()`` instead of a server error; other errors propagate."""
    caught = tuple(classes) if classes is not None else (ResponsibleException, )
    for cls in caught:
        if not (isinstance(cls, type) and issubclass(cls, ResponsibleException)):
            raise TypeError(f"responsible: classes must be ResponsibleException subclasses, got {cls!r}")

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except caught as err:
                return err.get_response()

        return wrapper

    return decorator


class ConnectionRefuse(ResponsibleException):
    """A slave refuses a master's connection (403)."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(1201, "Connection refused.", data, 403)


class DisconnectionRefuse(ResponsibleException):
    """A slave refuses to disconnect (403)."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(1203, "Disconnection refused.", data, 403)


class TaskRefuse(ResponsibleException):
    """A slave refuses a new task (403)."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(1301, "Task refused.", data, 403)


class TaskFail(Exception):
    """Raised in a slave's task handler: the task fails and the master's ``TaskFailed.result`` is ``result``."""

    def __init__(self, result: Mapping[str, Any] | None = None, message: str | None = None) -> None:
        super().__init__(f"Task process failed - {message}." if message else "Task process failed.")
        self.result: dict[str, Any] = dict(result or {})
        self.message = message


__all__ = ["CommonErrorCode", "flask_response", "success_response", "failure_response", "get_values_from_response",
           "ResponsibleException", "responsible", "ConnectionRefuse", "DisconnectionRefuse", "TaskRefuse", "TaskFail"]
