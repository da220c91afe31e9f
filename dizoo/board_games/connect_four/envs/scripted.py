"""Fixed opponents for Connect Four, with the policy interface the battle workers call (``forward``, ``reset``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .connect_four_env import board_from_features, drop, legal_columns, wins_at


class RandomPlayer:
    """Plays a uniformly random legal column (seeded)."""

    def __init__(self, board_rows: int = 4, board_cols: int = 5, seed: int = 0) -> None:
        self.rows, self.cols = board_rows, board_cols
        self.rng = np.random.default_rng(seed)

    def forward(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        return {env_id: {"action": np.array(self._random(board_from_features(obs, self.rows, self.cols)))}
                for env_id, obs in data.items()}

    def _random(self, board: np.ndarray) -> int:
        legal = legal_columns(board)
        return int(self.rng.choice(legal)) if legal.size else 0

    def reset(self, data_id: list[int] | None = None) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        """Its generator's state (a run's checkpoint carries it, so a resumed evaluation plays the same games)."""
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]


class ScriptedPlayer(RandomPlayer):
    """Wins when it can, blocks the opponent's winning column when it must, otherwise plays a random legal column."""

    def __init__(self, board_rows: int = 4, board_cols: int = 5, win_length: int = 3, seed: int = 0) -> None:
        super().__init__(board_rows, board_cols, seed)
        self.win_length = win_length

    def forward(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        return {env_id: {"action": np.array(self.choose(board_from_features(obs, self.rows, self.cols)))}
                for env_id, obs in data.items()}

    def choose(self, board: np.ndarray) -> int:
        """The column to play on ``board`` (1: own pieces, 2: the opponent's)."""
        for piece in (1, 2):  # first a winning column of its own, then one the opponent would win with
            col = self._winning_column(board, piece)
            if col is not None:
                return col
        return self._random(board)

    def _winning_column(self, board: np.ndarray, piece: int) -> int | None:
        for col in legal_columns(board):
            trial = board.copy()
            row = drop(trial, int(col), piece)
            if wins_at(trial, row, int(col), self.win_length):
                return int(col)
        return None
