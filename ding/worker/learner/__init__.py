"""The learner (``BaseLearner``), its hooks and checkpoint files."""
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
from .comm import BaseCommLearner, FlaskFileSystemLearner, create_comm_learner
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
    "find_latest_checkpoint", "iteration_ckpt_name",
    "list_iteration_checkpoints", "load_checkpoint_file", "load_latest_checkpoint", "load_policy_state",
    "rotate_checkpoints", "HOOK_SHORTHANDS", "POSITIONS",
    "Hook", "LearnerHook", "LearnerHookError", "LoadCkptHook", "LogReduceHook", "LogShowHook", "SaveCkptHook",
    "add_learner_hook", "build_learner_hook_by_cfg", "merge_hooks", "register_learner_hook", "show_hooks",
    "BaseCommLearner", "FlaskFileSystemLearner", "create_comm_learner",
]
