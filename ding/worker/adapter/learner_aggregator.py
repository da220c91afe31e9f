"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.learner_group.aggregator`."""
from ding.parallel.roles.learner_group.aggregator import (
    GROUP_CONFIG,
    LearnerAggregator,
    LearnerGroupMember,
    attach_policy,
    check_digests,
    member_seed,
    params_digest,
    policy_buffers,
    run_group_member,
    split_batch,
)

__all__ = [
    "GROUP_CONFIG", "split_batch", "params_digest", "attach_policy", "policy_buffers", "member_seed", "check_digests",
    "LearnerAggregator", "LearnerGroupMember", "run_group_member",
]
