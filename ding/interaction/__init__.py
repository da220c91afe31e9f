"""DI-engine's import path, re-exported from :mod:`ding.parallel.transport`."""
from ding.parallel.transport import *
from ding.parallel.transport import __all__
