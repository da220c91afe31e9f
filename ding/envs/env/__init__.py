from .base_env import BaseEnv, BaseEnvTimestep
