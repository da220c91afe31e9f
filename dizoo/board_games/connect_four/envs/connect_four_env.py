"""Connect Four on a small board (5 columns x 4 rows, three in a row by default) as a two-player battle env.

Players drop pieces in turn into columns; whoever first has ``win_length`` in a row (across, down or diagonally) wins.
Each env step takes one action per player (a column) but only the player to move plays; the other's action is
ignored and its info says ``'acted': False`` (the battle collectors then keep only each player's own decisions).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding.envs import BaseEnv, BaseEnvTimestep, InvalidActionError
from ding.utils import ENV_REGISTRY


def board_features(board: np.ndarray, player: int, to_play: int) -> np.ndarray:
    """Player ``player``'s view: its pieces, the opponent's pieces (each ``rows * cols``, row 0 at the bottom) and
    1.0 if it is to move."""
    mine = (board == player + 1).reshape(-1)
    theirs = (board == 2 - player).reshape(-1)
    return np.concatenate([mine, theirs, [float(to_play == player)]]).astype(np.float32)


def board_from_features(obs: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The board seen by a player: 1 its pieces, 2 the opponent's, 0 empty (inverse of :func:`board_features`)."""
    obs = np.asarray(obs).reshape(-1)
    n = rows * cols
    return (obs[:n] > 0.5).reshape(rows, cols) * 1 + (obs[n:2 * n] > 0.5).reshape(rows, cols) * 2


def legal_columns(board: np.ndarray) -> np.ndarray:
    return np.flatnonzero(board[-1] == 0)


def drop(board: np.ndarray, col: int, piece: int) -> int:
    """Put ``piece`` into column ``col`` (must not be full); return the row it lands in."""
    row = int(np.flatnonzero(board[:, col] == 0)[0])
    board[row, col] = piece
    return row


def wins_at(board: np.ndarray, row: int, col: int, win_length: int) -> bool:
    """Whether the piece at (row, col) completes ``win_length`` in a row."""
    piece = board[row, col]
    rows, cols = board.shape
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        count = 1
        for sign in (1, -1):
            r, c = row + sign * dr, col + sign * dc
            while 0 <= r < rows and 0 <= c < cols and board[r, c] == piece:
                count += 1
                r, c = r + sign * dr, c + sign * dc
        if count >= win_length:
            return True
    return False


@ENV_REGISTRY.register("connect_four")
class ConnectFourEnv(BaseEnv):
    """Per-player observations (``obs[i]``, see :func:`board_features`), rewards (shape (2, 1): +1 win, -1 loss,
    0 draw, given when the game ends) and infos (``'acted'``, ``'to_play'``, ``'action_mask'`` of legal columns, and
    at the end ``'result'`` and ``'eval_episode_return'``); ``done`` is shared.

    A column that is full loses the game for the player who chose it (``illegal_move='lose'``) or is an error
    (``'raise'``); a value that is not a column index is always an error.
    """

    config = dict(
        board_rows=4,
        board_cols=5,
        win_length=3,  # pieces in a row that win
        first_player="alternate",  # who moves first: 0, 1, 'alternate' (switch every game) or 'random' (seeded)
        # who moves first in the evaluator's envs (None: as first_player); 0 puts the evaluated player first
        eval_first_player=None,
        illegal_move="lose",  # a full column: 'lose' the game, or 'raise' InvalidActionError
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        merged = dict(self.config, **dict(cfg or {}))
        super().__init__(merged)
        self.rows, self.cols, self.win_length = int(merged["board_rows"]), int(merged["board_cols"]), \
            int(merged["win_length"])
        if not (2 <= self.win_length <= max(self.rows, self.cols)):
            raise ValueError(f"ConnectFourEnv: win_length {self.win_length} does not fit a {self.rows}x{self.cols} "
                             "board (env.win_length)")
        self.first_player = merged["first_player"]
        if self.first_player not in (0, 1, "alternate", "random"):
            raise ValueError(f"ConnectFourEnv: first_player {self.first_player!r} is not 0, 1, 'alternate' or "
                             "'random' (env.first_player)")
        if merged["illegal_move"] not in ("lose", "raise"):
            raise ValueError(f"ConnectFourEnv: illegal_move {merged['illegal_move']!r} is not 'lose' or 'raise'")
        self.illegal_move = merged["illegal_move"]
        obs_dim = 2 * self.rows * self.cols + 1
        self._observation_space = gym.spaces.Box(0.0, 1.0, shape=(2, obs_dim), dtype=np.float32)
        self._action_space = gym.spaces.Tuple((gym.spaces.Discrete(self.cols), gym.spaces.Discrete(self.cols)))
        self._reward_space = gym.spaces.Box(-1.0, 1.0, shape=(2, 1), dtype=np.float32)
        self._rng = np.random.default_rng(0)
        self._seed: int | None = None
        self._dynamic_seed = True
        self._games = 0
        self.board = np.zeros((self.rows, self.cols), dtype=np.int8)
        self.to_play = 0

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        """One config per evaluator env; ``eval_first_player`` (when set) replaces ``first_player`` there."""
        env_cfg = copy.deepcopy(dict(cfg))
        if env_cfg.get("eval_first_player") is not None:
            env_cfg["first_player"] = env_cfg["eval_first_player"]
        return [copy.deepcopy(env_cfg) for _ in range(int(env_cfg.get("evaluator_env_num", 1)))]

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed, self._dynamic_seed = int(seed), dynamic_seed
        self._rng = np.random.default_rng(seed)
        self._games = 0

    def reset(self) -> np.ndarray:
        if self._seed is not None and not self._dynamic_seed:  # evaluator envs: the same game every reset
            self._rng, game = np.random.default_rng(self._seed), 0
        else:
            game, self._games = self._games, self._games + 1
        self.board = np.zeros((self.rows, self.cols), dtype=np.int8)
        if self.first_player == "alternate":  # env i of a manager seeded with s starts with player (s + i) % 2
            self.to_play = ((self._seed or 0) + game) % 2
        elif self.first_player == "random":
            self.to_play = int(self._rng.integers(2))
        else:
            self.to_play = int(self.first_player)
        return self._obs()

    def _obs(self) -> np.ndarray:
        return np.stack([board_features(self.board, i, self.to_play) for i in range(2)])

    def step(self, action: Sequence[Any]) -> BaseEnvTimestep:
        mover = self.to_play
        col = self._column(action, mover)
        rewards = np.zeros((2, 1), dtype=np.float32)
        winner: int | None = None
        done = False
        if self.board[-1, col] != 0:
            if self.illegal_move == "raise":
                raise InvalidActionError(f"ConnectFourEnv.step: column {col} is full (player {mover})")
            winner, done = 1 - mover, True
        else:
            row = drop(self.board, col, mover + 1)
            if wins_at(self.board, row, col, self.win_length):
                winner, done = mover, True
            elif not legal_columns(self.board).size:
                done = True
        self.to_play = 1 - mover
        if winner is not None:
            rewards[winner], rewards[1 - winner] = 1.0, -1.0
        mask = np.zeros(self.cols, dtype=np.float32)
        mask[legal_columns(self.board)] = 1.0
        infos = []
        for i in range(2):
            info: dict[str, Any] = {"acted": i == mover, "to_play": self.to_play, "action_mask": mask.copy()}
            if done:
                info["result"] = "draws" if winner is None else ("wins" if winner == i else "losses")
                info["eval_episode_return"] = rewards[i].copy()
            infos.append(info)
        return BaseEnvTimestep(self._obs(), rewards, done, tuple(infos))

    def _column(self, action: Sequence[Any], mover: int) -> int:
        try:
            value = np.asarray(action[mover]).reshape(-1)
        except (TypeError, IndexError):
            raise InvalidActionError(f"ConnectFourEnv.step: expected one column per player, got {action!r}") from None
        if value.size != 1 or not float(value[0]).is_integer() or not 0 <= int(value[0]) < self.cols:
            raise InvalidActionError(f"ConnectFourEnv.step: player {mover}'s action {action[mover]!r} is not a column "
                                     f"0..{self.cols - 1}")
        return int(value[0])

    def close(self) -> None:
        pass

    @classmethod
    def eval_opponents(cls, cfg: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
        """The fixed opponent ``serial_pipeline_battle`` evaluates against: the scripted player (``'scripted'``)."""
        from .scripted import ScriptedPlayer  # (scripted.py imports this module)

        merged = dict(cls.config, **{k: v for k, v in dict(cfg).items() if k in cls.config})
        return {"scripted": ScriptedPlayer(int(merged["board_rows"]), int(merged["board_cols"]),
                                           int(merged["win_length"]), seed=seed)}

    def random_action(self) -> list[int]:
        legal = legal_columns(self.board)
        return [int(self._rng.choice(legal)) if legal.size else 0 for _ in range(2)]

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
        return f"ConnectFourEnv({self.rows}x{self.cols}, {self.win_length} in a row)"
