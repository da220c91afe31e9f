"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.response_errors`."""
from ding.parallel.transport.response_errors import (
    MasterChannelInvalid,
    MasterChannelNotGiven,
    MasterErrorCode,
    MasterMasterTokenInvalid,
    MasterMasterTokenNotGiven,
    MasterResponseException,
    MasterSelfTokenInvalid,
    MasterSelfTokenNotGiven,
    MasterSlaveTokenInvalid,
    MasterSlaveTokenNotGiven,
    MasterSuccess,
    MasterSystemShuttingDown,
    MasterTaskDataInvalid,
    get_master_exception_by_error,
    get_master_exception_class_by_error_code,
)

__all__ = [
    "MasterErrorCode", "MasterResponseException", "MasterSuccess", "MasterSystemShuttingDown", "MasterChannelNotGiven",
    "MasterChannelInvalid", "MasterMasterTokenNotGiven", "MasterMasterTokenInvalid", "MasterSelfTokenNotGiven",
    "MasterSelfTokenInvalid", "MasterSlaveTokenNotGiven", "MasterSlaveTokenInvalid", "MasterTaskDataInvalid",
    "get_master_exception_class_by_error_code", "get_master_exception_by_error"
]
