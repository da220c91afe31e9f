"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner`."""
from ding.parallel.roles.learner import (
    BaseCommLearner,
    FlaskFileSystemLearner,
    SendLearnInfoHook,
    SendPolicyHook,
    create_comm_learner,
)

__all__ = [
    "BaseCommLearner", "create_comm_learner", "FlaskFileSystemLearner", "SendLearnInfoHook", "SendPolicyHook",
]
