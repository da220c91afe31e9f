"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport.response_errors`."""
from ding.parallel.transport.response_errors import *
from ding.parallel.transport.response_errors import __all__
