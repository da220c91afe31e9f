"""PettingZoo envs: the general parallel-API adapter and DI-engine's ``petting_zoo`` simple-spread env.

Importing needs no PettingZoo; building an env does (``pip install 'ding[petting_zoo]'``).
"""
from .aec_battle_env import PettingZooBattleEnv, RandomLegalPlayer
from .parallel_adapter import PettingZooParallelEnv
from .petting_zoo_simple_spread_env import PettingZooEnv

__all__ = ["PettingZooBattleEnv", "PettingZooEnv", "PettingZooParallelEnv", "RandomLegalPlayer"]
