from .base_env import BaseEnv, BaseEnvTimestep
from .ding_env_wrapper import DingEnvWrapper, InvalidActionError, scale_action
from .env_factory import create_env, get_env_cls, get_vec_env_setting
from .env_implementation_check import (
    check_all,
    check_array_space,
    check_different_memory,
    check_obs_deepcopy,
    check_reset,
    check_space_dtype,
    check_step,
    demonstrate_correct_procedure,
)
