"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner.flask_fs`."""
from ding.parallel.roles.learner.flask_fs import (
    FlaskFileSystemLearner,
    ReadBatches,
    SendLearnInfoHook,
    SendPolicyHook,
    TrainerFacts,
)

__all__ = [
    "ReadBatches", "TrainerFacts", "SendPolicyHook", "SendLearnInfoHook", "FlaskFileSystemLearner",
]
