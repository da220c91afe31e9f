from .base_env import BaseEnv, BaseEnvTimestep
from .ding_env_wrapper import DingEnvWrapper, InvalidActionError, scale_action
from .env_factory import create_env, get_env_cls, get_vec_env_setting
