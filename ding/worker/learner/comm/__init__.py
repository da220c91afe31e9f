"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner`."""
from ding.parallel.roles.learner import *
from ding.parallel.roles.learner import __all__
