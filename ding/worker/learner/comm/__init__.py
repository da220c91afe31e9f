"""Comm learners: the learner process's link to the coordinator in parallel mode."""
from .base_comm_learner import BaseCommLearner, create_comm_learner
from .flask_fs_learner import FlaskFileSystemLearner, SendLearnInfoHook, SendPolicyHook

__all__ = ["BaseCommLearner", "create_comm_learner", "FlaskFileSystemLearner", "SendLearnInfoHook", "SendPolicyHook"]
