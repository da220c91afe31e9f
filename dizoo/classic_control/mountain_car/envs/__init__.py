from .mtcar_env import MountainCarEnv
