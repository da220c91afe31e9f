"""The environment interface every ding env implements."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import numpy as np

from ding.utils import config_of


class BaseEnvTimestep(NamedTuple):
    """What ``env.step`` returns. ``reward`` is a float32 array of shape (1,); ``done`` is ``terminated or truncated``.

    ``info['truncated']`` is True when the episode was cut by a time limit (so algorithms bootstrap), and at the end of
    an episode ``info['eval_episode_return']`` holds the episode's return.
    """

    obs: Any
    reward: Any
    done: bool
    info: dict


class BaseEnv(ABC):
    """Gymnasium-style environment with DI-engine's interface.

    Subclasses implement ``reset``, ``step``, ``seed``, ``close`` and the three spaces. ``seed(seed, dynamic_seed)``:
    with ``dynamic_seed=True`` every reset draws a fresh seed from an RNG seeded by ``seed`` (collector envs: varied
    but reproducible episodes); with False every reset uses ``seed`` itself (evaluator envs: the same episodes each
    evaluation).
    """

    config: dict = {}

    @classmethod
    def default_config(cls) -> dict:
        return config_of(cls)

    def __init__(self, cfg: dict | None = None) -> None:
        self._cfg = cfg

    @abstractmethod
    def reset(self) -> Any:
        ...

    @abstractmethod
    def step(self, action: Any) -> BaseEnvTimestep:
        ...

    @abstractmethod
    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        ...

    @abstractmethod
    def close(self) -> None:
        ...

    @property
    @abstractmethod
    def observation_space(self) -> Any:
        ...

    @property
    @abstractmethod
    def action_space(self) -> Any:
        ...

    @property
    def reward_space(self) -> Any:
        import gymnasium as gym

        return gym.spaces.Box(low=-np.inf, high=np.inf, shape=(1,), dtype=np.float32)

    def random_action(self) -> Any:
        return self.action_space.sample()

    def enable_save_replay(self, replay_path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support saving replays")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @staticmethod
    def create_collector_env_cfg(cfg: dict) -> list[dict]:
        """One config per collector env (the input is not changed)."""
        import copy

        n = cfg.get("collector_env_num", 1)
        return [copy.deepcopy(cfg) for _ in range(n)]

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        """One config per evaluator env (the input is not changed)."""
        import copy

        n = cfg.get("evaluator_env_num", 1)
        return [copy.deepcopy(cfg) for _ in range(n)]
