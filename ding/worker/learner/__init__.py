"""The learner (``BaseLearner``), its hooks and checkpoint files."""
from ding.utils.lazy_names import lazy_names

from .base_learner import BaseLearner, CountVar, create_learner
from .checkpoint import (
    CKPT_BEST_NAME,
    COLLECTOR_CKPT_DIR,
    best_checkpoint,
    find_latest_checkpoint,
    iteration_ckpt_name,
    list_iteration_checkpoints,
    load_checkpoint_file,
    load_latest_checkpoint,
    load_policy_state,
    rotate_checkpoints,
)
from .learner_hook import (
    HOOK_SHORTHANDS,
    POSITIONS,
    Hook,
    LearnerHook,
    LearnerHookError,
    LoadCkptHook,
    LogReduceHook,
    LogShowHook,
    SaveCkptHook,
    add_learner_hook,
    build_learner_hook_by_cfg,
    merge_hooks,
    register_learner_hook,
    show_hooks,
)

__all__ = [
    "BaseLearner", "CountVar", "create_learner", "CKPT_BEST_NAME", "COLLECTOR_CKPT_DIR", "best_checkpoint",
    "find_latest_checkpoint", "iteration_ckpt_name", "list_iteration_checkpoints", "load_checkpoint_file",
    "load_latest_checkpoint", "load_policy_state", "rotate_checkpoints", "HOOK_SHORTHANDS", "POSITIONS", "Hook",
    "LearnerHook", "LearnerHookError", "LoadCkptHook", "LogReduceHook", "LogShowHook", "SaveCkptHook",
    "add_learner_hook", "build_learner_hook_by_cfg", "merge_hooks", "register_learner_hook", "show_hooks",
]

# parallel mode's comm learners, lazily (not in __all__; ``from ding.worker import *`` has them)
__getattr__ = lazy_names(__name__, {name: "ding.parallel.roles.learner" for name in (
    "BaseCommLearner", "FlaskFileSystemLearner", "create_comm_learner")})
