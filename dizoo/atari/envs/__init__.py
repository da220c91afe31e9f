from .atari_env import AtariEnv
