"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner_group`."""
from ding.parallel.roles.learner_group import *
from ding.parallel.roles.learner_group import __all__
