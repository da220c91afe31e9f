"""DI-engine's import path, re-exported from ``ding.parallel.transport``'s modules."""
from ding.parallel.transport.base import (
    API_PREFIX,
    MAX_BODY_BYTES,
    TOKEN_ENV,
    TOKEN_HEADER,
    ApiError,
    InteractionError,
    JsonServer,
    PeerUnreachable,
    RequestRejected,
    SlaveLost,
    TaskCancelled,
    TaskFailed,
    TaskTimeout,
    envelope,
    find_free_port,
    new_token,
    resolve_token,
    token_source,
)
from ding.parallel.transport.common import (
    ControllableContext,
    ControllableService,
    DblEvent,
    default_func,
    random_token,
    translate_dict_func,
)
from ding.parallel.transport.http_engine import HttpEngine, get_host_ip, get_http_engine_class, split_http_address
from ding.parallel.transport.responses import (
    CommonErrorCode,
    ConnectionRefuse,
    DisconnectionRefuse,
    ResponsibleException,
    TaskFail,
    TaskRefuse,
    failure_response,
    flask_response,
    get_values_from_response,
    responsible,
    success_response,
)

__all__ = [
    "API_PREFIX", "TOKEN_HEADER", "TOKEN_ENV", "MAX_BODY_BYTES", "InteractionError", "RequestRejected",
    "PeerUnreachable", "TaskFailed", "TaskTimeout", "TaskCancelled", "SlaveLost", "ApiError", "new_token",
    "token_source", "resolve_token", "envelope", "find_free_port", "JsonServer",
    "CommonErrorCode", "flask_response", "success_response", "failure_response", "get_values_from_response",
    "ResponsibleException", "responsible", "random_token", "translate_dict_func",
    "default_func", "ControllableContext", "ControllableService", "DblEvent", "ConnectionRefuse", "DisconnectionRefuse",
    "TaskRefuse", "TaskFail", "get_host_ip", "split_http_address", "HttpEngine", "get_http_engine_class",
]
