"""Self-play leagues: players, the shared payoff table, PFSP opponent choice and Elo ratings.

Module paths and names follow DI-engine's ``ding.league``, so its imports carry over.
"""
from typing import Any

from .algorithm import PFSP_WEIGHTINGS, pfsp, uniform
from .base_league import BaseLeague, create_league
from .job import JobResult, LeagueJob, Outcome
from .metric import EloRating, PlayerRating, create_metric_env, expected_score, get_elo, get_elo_array
from .one_vs_one_league import OneVsOneLeague
from .player import ActivePlayer, HistoricalPlayer, NaiveSpPlayer, Player, PlayerConfig, create_player
from .shared_payoff import BattleRecord, BattleSharedPayoff, create_payoff
from .starcraft_player import LeagueExploiter, MainExploiter, MainPlayer

__all__ = [
    "pfsp", "uniform", "PFSP_WEIGHTINGS", "BaseLeague", "create_league", "OneVsOneLeague", "LeagueJob", "JobResult",
    "Outcome", "EloRating", "PlayerRating", "expected_score", "Player", "ActivePlayer", "HistoricalPlayer",
    "NaiveSpPlayer", "PlayerConfig", "create_player", "BattleRecord", "BattleSharedPayoff", "create_payoff",
    "MainPlayer", "MainExploiter", "LeagueExploiter", "get_elo", "get_elo_array", "create_metric_env",
    "LeagueMetricEnv",
]


def __getattr__(name: str) -> Any:
    # TrueSkill's LeagueMetricEnv is imported only when used: it needs the `league` extra (trueskill)
    if name == "LeagueMetricEnv":
        from .trueskill_metric import LeagueMetricEnv

        return LeagueMetricEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
