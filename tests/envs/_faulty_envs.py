"""Small envs for env manager tests, importable by spawned worker processes (``tests.envs._faulty_envs``).

``CounterEnv`` is deterministic given its seed; ``cfg`` switches on one misbehaviour at step ``at`` of an episode:
``fault='raise' | 'hang' | 'die' | 'bad_shape' | 'slow'``. With ``marker`` (a file path) the fault happens only once
across processes and rebuilt envs: the first env to fault creates the file.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np

from ding.envs import BaseEnv, BaseEnvTimestep


class CounterEnv(BaseEnv):
    """obs = [step, last action, uniform noise]; reward = action + noise; episodes last ``length`` steps."""

    def __init__(self, cfg: dict | None = None) -> None:
        super().__init__(cfg or {})
        c = self._cfg
        self._length = int(c.get("length", 6))
        self._fault = c.get("fault")
        self._at = int(c.get("at", 3))
        self._marker = c.get("marker")
        self._fault_reset = bool(c.get("fault_reset", False))
        self._obs_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self._act_space = gym.spaces.Discrete(2)
        self._rng = np.random.default_rng(0)
        self._seed = 0
        self._dynamic = True
        self._t = 0
        self._ret = 0.0
        if c.get("unpicklable"):
            self._lock = threading.Lock()

    def _should_fault(self) -> bool:
        if self._fault is None:
            return False
        if self._marker is None:
            return True
        try:
            fd = os.open(self._marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    def _misbehave(self) -> Any:
        kind = self._fault
        if kind == "raise":
            raise RuntimeError(f"boom at step {self._t}")
        if kind == "hang":
            time.sleep(60)
        if kind == "die":
            os._exit(3)
        if kind == "bad_shape":
            return np.zeros(5, dtype=np.float32)
        return None

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed, self._dynamic = seed, dynamic_seed
        self._seeder = np.random.default_rng(seed)

    def reset(self) -> np.ndarray:
        s = int(self._seeder.integers(2**31)) if self._dynamic and hasattr(self, "_seeder") else self._seed
        self._rng = np.random.default_rng(s)
        self._t, self._ret = 0, 0.0
        if self._fault_reset and self._should_fault():
            bad = self._misbehave()
            if bad is not None:
                return bad
        return np.array([0.0, 0.0, self._rng.random()], dtype=np.float32)

    def step(self, action: Any) -> BaseEnvTimestep:
        a = int(action)
        if not 0 <= a < 2:
            from ding.envs import InvalidActionError

            raise InvalidActionError(f"action {a} is outside the action space Discrete(2)")
        self._t += 1
        if self._fault == "slow":
            time.sleep(float(self._cfg.get("delay", 0.2)))
        obs = np.array([self._t, a, self._rng.random()], dtype=np.float32)
        if not self._fault_reset and self._t == self._at and self._should_fault():
            bad = self._misbehave()
            if bad is not None:
                obs = bad
        reward = np.array([a + obs[-1]], dtype=np.float32)
        self._ret += float(reward[0])
        done = self._t >= self._length
        info = {"truncated": False}
        if self._cfg.get("report_worker"):  # what the worker process set up for its env
            import torch

            info["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
            info["torch_threads"] = torch.get_num_threads()
            torch.set_num_threads(3)  # the worker must bring it back to 1 after this command
        if done:
            info["eval_episode_return"] = self._ret
        return BaseEnvTimestep(obs, reward, done, info)

    def close(self) -> None:
        pass

    def enable_save_replay(self, replay_path: str) -> None:
        """Leaves a file in ``replay_path`` so tests can see which env got which path."""
        os.makedirs(replay_path, exist_ok=True)
        with open(os.path.join(replay_path, "enabled"), "w") as f:
            f.write(str(os.getpid()))

    @property
    def observation_space(self) -> gym.spaces.Space:
        return self._obs_space

    @property
    def action_space(self) -> gym.spaces.Space:
        return self._act_space

    def __repr__(self) -> str:
        return f"CounterEnv(fault={self._fault})"


def policy(obs: np.ndarray) -> int:
    """A deterministic action from an observation (so every manager type sees the same episodes)."""
    return int(obs[-1] > 0.5)
