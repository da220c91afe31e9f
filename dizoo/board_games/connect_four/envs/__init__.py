from .connect_four_env import ConnectFourEnv
from .scripted import RandomPlayer, ScriptedPlayer

__all__ = ["ConnectFourEnv", "ScriptedPlayer", "RandomPlayer"]
