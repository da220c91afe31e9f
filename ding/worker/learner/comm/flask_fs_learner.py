"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner.flask_fs`."""
from ding.parallel.roles.learner.flask_fs import (
    FlaskFileSystemLearner,
    ReadBatches,
    SendLearnInfoHook,
    SendPolicyHook,
)

__all__ = [
    "ReadBatches", "SendPolicyHook", "SendLearnInfoHook", "FlaskFileSystemLearner",
]
