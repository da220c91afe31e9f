"""What a Connect Four player can win against the scripted player, computed exactly over the game tree.

    python tests/benchmark/c4_best_reply.py                 # 4 rows x 5 columns, three in a row (a few seconds)

The scripted player (``dizoo.board_games.connect_four.envs.ScriptedPlayer``) is a fixed random policy: it plays
its first winning column, else its first column that blocks the opponent's win, else a uniformly random legal
column. So the best reply to it is an expectimax search: the reply maximises its probability of winning, the
scripted player's moves are averaged. The script prints that probability when the reply moves first and second,
and the same for a uniformly random legal player (docs/league.md, "Connect Four: the choices", quotes them).
"""
from __future__ import annotations

import argparse
import sys
from functools import cache

import numpy as np

from dizoo.board_games.connect_four.envs import ScriptedPlayer
from dizoo.board_games.connect_four.envs.connect_four_env import drop, legal_columns, wins_at

Board = bytes  # rows * cols cells, row 0 at the bottom: 0 empty, 1 the reply's piece, 2 the scripted player's


def win_probabilities(rows: int, cols: int, win_length: int, reply: str) -> tuple[float, float, int]:
    """P(the reply wins) moving first and moving second; ``reply`` is ``'best'`` or ``'random'``. Also the number of
    positions searched."""
    scripted = ScriptedPlayer(rows, cols, win_length)

    def play(board: Board, col: int, piece: int) -> tuple[Board, bool]:
        grid = np.frombuffer(board, dtype=np.int8).reshape(rows, cols).copy()
        row = drop(grid, col, piece)
        return grid.tobytes(), wins_at(grid, row, col, win_length)

    @cache
    def value(board: Board, reply_to_move: bool) -> float:
        grid = np.frombuffer(board, dtype=np.int8).reshape(rows, cols)
        legal = [int(c) for c in legal_columns(grid)]
        if not legal:
            return 0.0  # a draw
        if reply_to_move:
            outcomes = []
            for col in legal:
                after, won = play(board, col, 1)
                outcomes.append(1.0 if won else value(after, False))
            return max(outcomes) if reply == "best" else sum(outcomes) / len(outcomes)
        forced = None  # the scripted player's rule, on its own view (its pieces 1, the reply's 2)
        view = np.where(grid == 0, 0, 3 - grid)
        for piece in (1, 2):
            forced = scripted._winning_column(view, piece)
            if forced is not None:
                break
        choices = legal if forced is None else [forced]
        total = 0.0
        for col in choices:
            after, won = play(board, col, 2)
            total += 0.0 if won else value(after, True)
        return total / len(choices)

    empty = bytes(rows * cols)
    first, second = value(empty, True), value(empty, False)
    return first, second, value.cache_info().currsize


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--cols", type=int, default=5)
    parser.add_argument("--win-length", type=int, default=3)
    args = parser.parse_args(argv)
    for reply in ("best", "random"):
        first, second, positions = win_probabilities(args.rows, args.cols, args.win_length, reply)
        print(f"{reply} reply: wins {first:.1%} moving first, {second:.1%} moving second, "
              f"{(first + second) / 2:.1%} alternating ({positions:,} positions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
