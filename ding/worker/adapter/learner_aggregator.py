"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner_group.aggregator`."""
from ding.parallel.roles.learner_group.aggregator import *  # noqa: F403
from ding.parallel.roles.learner_group.aggregator import __all__  # noqa: F401
