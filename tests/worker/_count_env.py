"""A tiny env whose observation is the step count, with uneven step times (so async managers reorder answers)."""
from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from ding.envs import BaseEnv, BaseEnvTimestep


class CountEnv(BaseEnv):
    def __init__(self, cfg: dict | None = None) -> None:
        super().__init__(cfg)
        self._t = 0
        self._length = 6
        self._delay = 0.0
        self._rng = np.random.default_rng(0)

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._rng = np.random.default_rng(seed)
        self._delay = 0.002 * (seed % 3)  # envs answer at different speeds

    def reset(self) -> np.ndarray:
        self._t = 0
        self._length = int(self._rng.integers(4, 9))
        return np.array([0.0], dtype=np.float32)

    def step(self, action) -> BaseEnvTimestep:
        if self._delay:
            time.sleep(self._delay)
        self._t += 1
        done = self._t >= self._length
        info = {"eval_episode_return": float(self._t)} if done else {}
        return BaseEnvTimestep(np.array([self._t], dtype=np.float32), np.array([1.0], np.float32), done, info)

    def close(self) -> None:
        pass

    @property
    def observation_space(self):
        return gym.spaces.Box(0, 100, (1,), np.float32)

    @property
    def action_space(self):
        return gym.spaces.Discrete(2)
