"""Several learners behind one: the :class:`LearnerAggregator` (rank 0, the coordinator's learner) and the other
members of its ``torch.distributed`` learner group."""
from ding.parallel.roles.learner_group.aggregator import (
           LearnerAggregator,
           LearnerGroupMember,
           run_group_member,
           split_batch,
)
from ding.parallel.roles.learner_group.group import LearnerGroup, LearnerGroupError, rendezvous_path

__all__ = ["LearnerAggregator", "LearnerGroupMember", "LearnerGroup", "LearnerGroupError",
           "rendezvous_path", "run_group_member", "split_batch"]
