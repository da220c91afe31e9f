from .mujoco_env import MujocoEnv
