"""The players' model files of a league run, and the league as one part of a run's checkpoint.

A league knows players by checkpoint path only; a training loop (serial or parallel) writes each active player's
model there, and the league copies it when it takes a snapshot. These helpers are the one way both modes write and
read those files (atomically, tensors only) and put the league's state into the run's checkpoint:
:class:`LeagueCheckpointPart` has the ``state_dict`` / ``load_state_dict`` pair a run registers, and a restore
checks that every historical player's file is still there, so a resumed run never meets a missing opponent later.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

from ding.utils import CheckpointError, torch_save_atomic

from .base_league import BaseLeague


def save_player_model(path: str, model_state: Mapping[str, Any]) -> None:
    """Write a player's model weights (``policy.collect_mode.state_dict()``) to ``path``, atomically."""
    torch_save_atomic(dict(model_state), path)


def load_player_model(path: str, player_id: str) -> dict[str, Any]:
    """The model weights :func:`save_player_model` wrote for ``player_id`` (read tensors-only)."""
    if not os.path.isfile(path):
        raise CheckpointError(f"league: the checkpoint of player '{player_id}' is missing ('{path}'); the run's "
                              "policy directory must keep every player's file (do not clean it while the run lives)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a damaged file: name it
        raise CheckpointError(f"league: the checkpoint of player '{player_id}' ('{path}') cannot be read: {e}") from e
    if not isinstance(state, dict):
        raise CheckpointError(f"league: the checkpoint of player '{player_id}' ('{path}') holds "
                              f"{type(state).__name__}, not a model state dict")
    return state


def missing_player_files(league: BaseLeague) -> list[str]:
    """Ids of the historical players whose checkpoint file is not on disk."""
    return [p.player_id for p in league.historical_players if not os.path.isfile(p.checkpoint_path)]


class LeagueCheckpointPart:
    """The league as a part of a run's checkpoint: its whole state (players, payoff, ratings, RNG) as a dict."""

    def __init__(self, league: BaseLeague) -> None:
        self.league = league

    def state_dict(self) -> dict[str, Any]:
        return self.league.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.league.load_state_dict(state)
        missing = missing_player_files(self.league)
        if missing:
            raise CheckpointError(f"league: the checkpoint files of historical players {missing} are gone from "
                                  f"'{self.league.path_policy}'; the run cannot continue exactly without them")
