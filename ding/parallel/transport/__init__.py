"""Master/slave messaging over HTTP for parallel mode (docs/parallel.md: endpoints, envelope, auth, failures)."""
from ding.parallel.transport.base import (
    API_PREFIX,
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
    find_free_port,
    local_address,
    new_token,
    resolve_advertise_host,
    resolve_token,
    token_source,
)
from ding.parallel.transport.client import HttpClient
from ding.parallel.transport.master import Master, SlaveConnection, TaskHandle
from ding.parallel.transport.responses import (
    ConnectionRefuse,
    DisconnectionRefuse,
    ResponsibleException,
    TaskFail,
    TaskRefuse,
    failure_response,
    success_response,
)
from ding.parallel.transport.slave import Slave

__all__ = [
    "API_PREFIX", "TOKEN_ENV", "TOKEN_HEADER", "ApiError", "InteractionError", "JsonServer", "PeerUnreachable",
    "RequestRejected", "SlaveLost", "TaskCancelled", "TaskFailed", "TaskTimeout", "find_free_port", "new_token",
    "resolve_token", "token_source", "local_address", "resolve_advertise_host",
    "HttpClient", "Master", "SlaveConnection", "TaskHandle", "Slave",
    # DI-engine's names (ding.parallel.transport.responses)
    "ConnectionRefuse", "DisconnectionRefuse", "ResponsibleException", "TaskFail", "TaskRefuse", "failure_response",
    "success_response",
]
