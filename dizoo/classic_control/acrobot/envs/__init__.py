from .acrobot_env import AcroBotEnv
