"""A two-player turn-based PettingZoo game (an AEC env of the classic family: ``tictactoe_v3``, ``connect_four_v3``)
as a battle env, so it trains by league self-play with the battle collectors (docs/league.md).

The shape is the battle envs' (see ``dizoo.board_games.connect_four``): one env step takes an action per seat but only
the seat to move plays; ``obs[i]`` is seat i's view, its features the game's own observation flattened, then the legal
moves (the game's ``action_mask``) and 1.0 when it is to move; rewards (2, 1) come at the end (+1 win, -1 loss,
0 draw); infos say ``'acted'``, ``'to_play'``, ``'action_mask'`` and, at the end, ``'result'`` and
``'eval_episode_return'``. An illegal move loses the game for the seat that made it. Seat 0 moves first in even games
(``first_player='alternate'``, the default) or always (0) or never (1).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding.envs import BaseEnv, BaseEnvTimestep
from ding.utils import ENV_REGISTRY

from .parallel_adapter import import_env_module


@ENV_REGISTRY.register("petting_zoo_battle")
class PettingZooBattleEnv(BaseEnv):
    config = dict(
        # Module of a two-player AEC game whose observations are {'observation', 'action_mask'} dicts.
        env_id="pettingzoo.classic.tictactoe_v3",
        env_kwargs=dict(),
        # Who moves first: 0, 1 or 'alternate' (env i of a manager seeded with s starts with seat (s + i + game) % 2).
        first_player="alternate",
        eval_first_player=None,
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        merged = dict(self.config, **dict(cfg or {}))
        super().__init__(merged)
        if merged["first_player"] not in (0, 1, "alternate"):
            raise ValueError(f"petting_zoo_battle: env.first_player {merged['first_player']!r} is not 0, 1 or "
                             "'alternate'")
        self._env = import_env_module(str(merged["env_id"])).env(**dict(merged["env_kwargs"] or {}))
        self._agents = list(self._env.possible_agents)
        if len(self._agents) != 2:
            raise ValueError(f"petting_zoo_battle: {merged['env_id']} has {len(self._agents)} agents; a battle env "
                             "needs a two-player game")
        space = self._env.observation_space(self._agents[0])
        self._n_actions = int(self._env.action_space(self._agents[0]).n)
        obs_dim = int(np.prod(space["observation"].shape)) + self._n_actions + 1
        self._observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2, obs_dim), dtype=np.float32)
        self._action_space = gym.spaces.Tuple((gym.spaces.Discrete(self._n_actions),) * 2)
        self._seed, self._games, self._dynamic_seed = 0, 0, True
        self._seat_of: dict[str, int] = {}

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        env_cfg = dict(cfg)
        if env_cfg.get("eval_first_player") is not None:
            env_cfg["first_player"] = env_cfg["eval_first_player"]
        return [dict(env_cfg) for _ in range(int(env_cfg.get("evaluator_env_num", 1)))]

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed, self._dynamic_seed, self._games = int(seed), dynamic_seed, 0

    def reset(self) -> np.ndarray:
        game = self._games if self._dynamic_seed else 0
        self._games += 1
        self._env.reset(seed=self._seed + game)
        first = self._cfg["first_player"]
        first_seat = (self._seed + game) % 2 if first == "alternate" else int(first)
        # the game's first agent moves first: it sits in first_seat
        self._seat_of = {self._agents[0]: first_seat, self._agents[1]: 1 - first_seat}
        return self._obs()

    def _to_play(self) -> int:
        return self._seat_of[self._env.agent_selection]

    def _obs(self) -> np.ndarray:
        to_play = self._to_play() if self._env.agents else -1
        rows = [None, None]
        for agent, seat in self._seat_of.items():
            o = self._env.observe(agent)
            mask = np.asarray(o["action_mask"], np.float32) if seat == to_play else np.zeros(self._n_actions,
                                                                                                 np.float32)
            rows[seat] = np.concatenate([np.asarray(o["observation"], np.float32).reshape(-1), mask,
                                         [float(seat == to_play)]])
        return np.stack(rows).astype(np.float32)

    def step(self, action: Sequence[Any]) -> BaseEnvTimestep:
        mover = self._to_play()
        agent = self._env.agent_selection
        move = int(np.asarray(action[mover]).reshape(-1)[0])
        legal = np.asarray(self._env.observe(agent)["action_mask"]) > 0
        rewards = np.zeros((2, 1), np.float32)
        if not (0 <= move < self._n_actions and legal[move]):  # an illegal move loses
            rewards[mover], rewards[1 - mover], done = -1.0, 1.0, True
        else:
            self._env.step(move)
            done = all(self._env.terminations.get(a, True) or self._env.truncations.get(a, False)
                       for a in self._agents)
            for a, seat in self._seat_of.items():
                rewards[seat] = float(self._env._cumulative_rewards.get(a, 0.0)) if done else 0.0
        obs = self._obs() if not done else np.zeros(self._observation_space.shape, np.float32)
        to_play = 1 - mover
        mask = obs[to_play, -self._n_actions - 1:-1].copy()
        infos = []
        for seat in range(2):
            info: dict[str, Any] = {"acted": seat == mover, "to_play": to_play, "action_mask": mask.copy()}
            if done:
                r = float(rewards[seat, 0])
                info["result"] = "wins" if r > 0 else ("losses" if r < 0 else "draws")
                info["eval_episode_return"] = rewards[seat].copy()
            infos.append(info)
        return BaseEnvTimestep(obs, rewards, done, tuple(infos))

    def close(self) -> None:
        self._env.close()

    @classmethod
    def eval_opponents(cls, cfg: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
        """The fixed opponent the league run evaluates against: a uniformly random legal player (``'random'``)."""
        env = cls(cfg)
        n_actions = env._n_actions
        env.close()
        return {"random": RandomLegalPlayer(n_actions, seed)}

    def random_action(self) -> list[int]:
        legal = np.flatnonzero(np.asarray(self._env.observe(self._env.agent_selection)["action_mask"]) > 0)
        return [int(np.random.choice(legal)) for _ in range(2)]

    @property
    def observation_space(self) -> gym.spaces.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.spaces.Space:
        return self._action_space

    @property
    def reward_space(self) -> gym.spaces.Space:
        return gym.spaces.Box(-1.0, 1.0, shape=(2, 1), dtype=np.float32)


class RandomLegalPlayer:
    """Plays a uniformly random legal move, read from its observation's legal-move features (seeded)."""

    def __init__(self, n_actions: int, seed: int = 0) -> None:
        self.n_actions = int(n_actions)
        self.rng = np.random.default_rng(seed)

    def forward(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        out = {}
        for env_id, obs in data.items():
            obs = np.asarray(obs).reshape(-1)
            legal = np.flatnonzero(obs[-self.n_actions - 1:-1] > 0)
            out[env_id] = {"action": np.array(int(self.rng.choice(legal)) if legal.size else 0)}
        return out

    def reset(self, data_id: list[int] | None = None) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]

