"""The league of two-player games: each job is one active player against one opponent."""
from __future__ import annotations

import copy
from typing import Any, ClassVar

from ding.utils import LEAGUE_REGISTRY

from .base_league import BaseLeague
from .job import LeagueJob
from .player import ActivePlayer


@LEAGUE_REGISTRY.register("one_vs_one")
class OneVsOneLeague(BaseLeague):
    """Collect jobs pit the launching player against the opponent its branches choose; eval jobs name the
    built-in opponent's difficulty instead."""

    config: ClassVar[dict[str, Any]] = dict(copy.deepcopy(BaseLeague.config), league_type="one_vs_one")

    def _get_job_info(self, player: ActivePlayer, eval_flag: bool = False) -> LeagueJob:
        if eval_flag:
            return LeagueJob(player.player_id, (player.player_id,), (player.checkpoint_path,), (True,),
                             eval_opponent=player.eval_opponent)
        opponent = player.choose_opponent()
        return LeagueJob(player.player_id, (player.player_id, opponent.player_id),
                         (player.checkpoint_path, opponent.checkpoint_path),
                         (True, isinstance(opponent, ActivePlayer)))
