"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner.base`."""
from ding.parallel.roles.learner.base import BaseCommLearner, create_comm_learner

__all__ = ["BaseCommLearner", "create_comm_learner"]
