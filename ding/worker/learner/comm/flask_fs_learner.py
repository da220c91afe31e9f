"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner.flask_fs`."""
from ding.parallel.roles.learner.flask_fs import *  # noqa: F403
from ding.parallel.roles.learner.flask_fs import __all__  # noqa: F401
