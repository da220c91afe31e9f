"""The learner role: its link to the coordinator, the trainer it runs, its policy publisher."""
from ding.parallel.roles.learner.base import BaseCommLearner, create_comm_learner
from ding.parallel.roles.learner.flask_fs import FlaskFileSystemLearner, SendLearnInfoHook, SendPolicyHook

__all__ = ["BaseCommLearner", "create_comm_learner", "FlaskFileSystemLearner", "SendLearnInfoHook", "SendPolicyHook"]
