"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.response_errors`."""
from ding.parallel.transport.response_errors import (
    SlaveChannelInvalid,
    SlaveChannelNotFound,
    SlaveErrorCode,
    SlaveMasterTokenInvalid,
    SlaveMasterTokenNotFound,
    SlaveResponseException,
    SlaveSelfTokenInvalid,
    SlaveSelfTokenNotFound,
    SlaveSlaveAlreadyConnected,
    SlaveSlaveConnectionRefused,
    SlaveSlaveDisconnectionRefused,
    SlaveSlaveNotConnected,
    SlaveSuccess,
    SlaveSystemShuttingDown,
    SlaveTaskAlreadyExist,
    SlaveTaskRefused,
    get_slave_exception_by_error,
    get_slave_exception_class_by_error_code,
)

__all__ = [
    "SlaveErrorCode", "SlaveResponseException", "SlaveSuccess", "SlaveSystemShuttingDown", "SlaveChannelNotFound",
    "SlaveChannelInvalid", "SlaveMasterTokenNotFound", "SlaveMasterTokenInvalid", "SlaveSelfTokenNotFound",
    "SlaveSelfTokenInvalid", "SlaveSlaveAlreadyConnected", "SlaveSlaveNotConnected", "SlaveSlaveConnectionRefused",
    "SlaveSlaveDisconnectionRefused", "SlaveTaskAlreadyExist", "SlaveTaskRefused",
    "get_slave_exception_class_by_error_code", "get_slave_exception_by_error"
]
