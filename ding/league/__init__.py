"""Self-play leagues: players, the shared payoff table, PFSP opponent choice and Elo ratings.

Module paths and names follow DI-engine's ``ding.league``, so its imports carry over.
"""
from .algorithm import PFSP_WEIGHTINGS, pfsp, uniform
from .base_league import BaseLeague, create_league
from .job import JobResult, LeagueJob, Outcome
from .metric import EloRating, PlayerRating, expected_score
from .one_vs_one_league import OneVsOneLeague
from .player import ActivePlayer, HistoricalPlayer, NaiveSpPlayer, Player, PlayerConfig, create_player
from .shared_payoff import BattleRecord, BattleSharedPayoff, create_payoff
from .starcraft_player import LeagueExploiter, MainExploiter, MainPlayer

__all__ = [
    "pfsp", "uniform", "PFSP_WEIGHTINGS", "BaseLeague", "create_league", "OneVsOneLeague", "LeagueJob", "JobResult",
    "Outcome", "EloRating", "PlayerRating", "expected_score", "Player", "ActivePlayer", "HistoricalPlayer",
    "NaiveSpPlayer", "PlayerConfig", "create_player", "BattleRecord", "BattleSharedPayoff", "create_payoff",
    "MainPlayer", "MainExploiter", "LeagueExploiter",
]
