"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner_group`."""
from ding.parallel.roles.learner_group import (
    LearnerAggregator,
    LearnerGroup,
    LearnerGroupError,
    LearnerGroupMember,
    rendezvous_path,
    run_group_member,
    split_batch,
)

__all__ = [
    "LearnerAggregator", "LearnerGroupMember", "LearnerGroup", "LearnerGroupError", "rendezvous_path",
    "run_group_member", "split_batch",
]
