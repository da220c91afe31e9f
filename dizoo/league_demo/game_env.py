"""The league demo's matrix game: both players pick 0 or 1 at once, the episode ends after that one step.

``env_type`` (DI-engine's ``env.env_type`` key) picks the payoff table:

- ``'prisoner_dilemma'``: 0 cooperates, 1 defects. Both cooperate: -1 each; both defect: -10 each; a defector facing a
  cooperator gets 0 and the cooperator -20. Defecting dominates, so the equilibrium is (1, 1).
- ``'zero_sum'``: (0, 0) pays player 0 +3, (1, 1) pays +1, a mismatch pays -2; player 1 gets the negative. The mixed
  equilibrium plays 0 with probability 3/8 (value -1/8 for player 0).

``optimal_policy`` is the equilibrium's ``[P(action 0), P(action 1)]``, the same for both players.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding.envs import BaseEnv, BaseEnvTimestep, InvalidActionError
from ding.utils import ENV_REGISTRY

# (action of player 0, action of player 1) -> (reward of player 0, reward of player 1)
PAYOFFS: dict[str, dict[tuple[int, int], tuple[float, float]]] = {
    "prisoner_dilemma": {(0, 0): (-1.0, -1.0), (0, 1): (-20.0, 0.0), (1, 0): (0.0, -20.0), (1, 1): (-10.0, -10.0)},
    "zero_sum": {(0, 0): (3.0, -3.0), (0, 1): (-2.0, 2.0), (1, 0): (-2.0, 2.0), (1, 1): (1.0, -1.0)},
}
OPTIMAL_POLICY: dict[str, list[float]] = {"prisoner_dilemma": [0.0, 1.0], "zero_sum": [0.375, 0.625]}
# What each player's info['result'] says (DI-engine's words). In the zero-sum game the player with the positive
# reward wins; in the prisoner's dilemma only a defector facing a cooperator wins.
_RESULTS: dict[str, dict[tuple[int, int], tuple[str, str]]] = {
    "prisoner_dilemma": {(0, 0): ("draws", "draws"), (0, 1): ("losses", "wins"), (1, 0): ("wins", "losses"),
                         (1, 1): ("draws", "draws")},
    "zero_sum": {(0, 0): ("wins", "losses"), (0, 1): ("losses", "wins"), (1, 0): ("losses", "wins"),
                 (1, 1): ("wins", "losses")},
}
# Each player sees a constant one-hot observation that tells it which seat it has.
_OBS = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)


@ENV_REGISTRY.register("league_demo_game")
class GameEnv(BaseEnv):
    """Two players, one simultaneous move, per-player observations (row ``i`` of a (2, 2) array), rewards (shape
    (2, 1)) and infos (``{'result': 'wins'|'draws'|'losses', 'eval_episode_return': array([r])}``); ``done`` is shared.

    ``GameEnv('zero_sum')`` as in DI-engine's demo, or ``GameEnv(cfg)`` with ``cfg.env_type`` (what the env registry
    and the env managers pass). ``step`` takes one action per player (ints, or arrays/tensors holding one int).
    """

    config = dict(env_type="prisoner_dilemma")  # 'prisoner_dilemma' or 'zero_sum'

    def __init__(self, env_type: str | Mapping[str, Any] = "prisoner_dilemma", *,
                 cfg: Mapping[str, Any] | None = None) -> None:
        if cfg is not None:  # what the env managers pass: GameEnv(cfg=env_cfg)
            env_type = cfg
        cfg = dict(env_type=env_type) if isinstance(env_type, str) else dict(env_type)
        super().__init__(cfg)
        game = cfg.get("env_type", "prisoner_dilemma")
        if game not in PAYOFFS:
            raise ValueError(f"GameEnv: env_type {game!r} is not one of {sorted(PAYOFFS)} (env.env_type)")
        self.game_type = game  # DI-engine's attribute name
        self.optimal_policy = list(OPTIMAL_POLICY[game])
        self._observation_space = gym.spaces.Box(0.0, 1.0, shape=(2, 2), dtype=np.float32)
        self._action_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(2)))
        self._reward_space = gym.spaces.Box(-20.0, 20.0, shape=(2, 1), dtype=np.float32)
        self._rng = np.random.default_rng(0)

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        # The game is deterministic; the seed only drives random_action.
        self._rng = np.random.default_rng(seed)
        self._action_space.seed(seed)

    def reset(self) -> np.ndarray:
        return _OBS.copy()

    def step(self, action: Sequence[Any]) -> BaseEnvTimestep:
        joint = self._joint_action(action)
        rewards = np.asarray(PAYOFFS[self.game_type][joint], dtype=np.float32).reshape(2, 1)
        results = _RESULTS[self.game_type][joint]
        info = tuple({"result": results[i], "eval_episode_return": rewards[i].copy()} for i in range(2))
        return BaseEnvTimestep(_OBS.copy(), rewards, True, info)

    def _joint_action(self, action: Sequence[Any]) -> tuple[int, int]:
        try:
            values = [np.asarray(a).reshape(-1) for a in action]
        except TypeError:
            values = []
        if len(values) != 2 or any(v.size != 1 for v in values):
            raise InvalidActionError(f"GameEnv.step: expected one action per player (2 values 0 or 1), got {action!r}")
        joint = tuple(int(v[0]) for v in values)
        if any(a not in (0, 1) or float(v[0]) != a for a, v in zip(joint, values)):
            raise InvalidActionError(f"GameEnv.step: actions must be 0 or 1, got {action!r}")
        return joint[0], joint[1]

    def close(self) -> None:
        pass

    @classmethod
    def eval_opponents(cls, cfg: Mapping[str, Any], seed: int = 0) -> dict[str, MixedPlayer]:
        """The fixed opponents ``serial_pipeline_battle`` evaluates against, in the order of DI-engine's demo
        stop values: the equilibrium player (``'fixed_evaluator'``) and a uniformly random one
        (``'uniform_evaluator'``)."""
        game = cfg.get("env_type", "prisoner_dilemma")
        if game not in OPTIMAL_POLICY:
            raise ValueError(f"GameEnv: env_type {game!r} is not one of {sorted(PAYOFFS)} (env.env_type)")
        return {"fixed_evaluator": MixedPlayer(OPTIMAL_POLICY[game], seed),
                "uniform_evaluator": MixedPlayer([0.5, 0.5], seed + 1)}

    def random_action(self) -> list[int]:
        return [int(a) for a in self._rng.integers(0, 2, size=2)]

    @property
    def observation_space(self) -> gym.spaces.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.spaces.Space:
        return self._action_space

    @property
    def reward_space(self) -> gym.spaces.Space:
        return self._reward_space

    def __repr__(self) -> str:
        return f"GameEnv({self.game_type!r})"


class MixedPlayer:
    """A fixed opponent that plays action 0 with probability ``probs[0]`` and 1 otherwise (its own seeded generator;
    ``state_dict`` / ``load_state_dict`` carry it through a run's checkpoint)."""

    def __init__(self, probs: Sequence[float], seed: int = 0) -> None:
        self.probs = [float(p) for p in probs]
        self.rng = np.random.default_rng(seed)

    def forward(self, data: Mapping[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        return {env_id: {"action": np.array(int(self.rng.choice(2, p=self.probs)))} for env_id in data}

    def reset(self, data_id: list[int] | None = None) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
