"""Elo ratings of the league's players.

Player A's expected score against B is ``E_A = 1 / (1 + 10 ** ((R_B - R_A) / scale))`` (``scale`` = 400, the usual
chess scale: a 400-point lead means an expected score of 10/11). After one game with score ``S_A`` (win 1, draw 0.5,
loss 0), ``R_A += K * (S_A - E_A)`` and ``R_B += K * ((1 - S_A) - E_B)``. ``K`` (``elo_k``, default 32) bounds the
change one game can make; games are applied one at a time, in order. Ratings are floats (not rounded).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .job import Outcome

# Score of the home player per outcome.
SCORE = {Outcome.WIN: 1.0, Outcome.DRAW: 0.5, Outcome.LOSS: 0.0}


@dataclass
class PlayerRating:
    """One player's Elo rating and how many rated games it rests on."""

    elo: float
    games: int = 0

    @property
    def exposure(self) -> float:
        """The value the league ranks players by (DI-engine's TrueSkill name for it); here, the Elo rating."""
        return self.elo


def expected_score(rating_a: float, rating_b: float, scale: float = 400.0) -> float:
    """Expected score of A against B (1 = sure win)."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / scale))


class EloRating:
    """The league's rating system: creates ratings and updates them from game outcomes."""

    def __init__(self, elo_init: float = 1200.0, k_factor: float = 32.0, scale: float = 400.0) -> None:
        if not k_factor > 0 or not scale > 0:
            raise ValueError(f"EloRating: k_factor and scale must be > 0, got k_factor={k_factor}, scale={scale}")
        self.elo_init, self.k_factor, self.scale = float(elo_init), float(k_factor), float(scale)

    def create_rating(self, elo: float | None = None) -> PlayerRating:
        return PlayerRating(self.elo_init if elo is None else float(elo))

    def rate_1vs1(self, home: PlayerRating, away: PlayerRating,
                  outcomes: Iterable[Outcome | str]) -> tuple[PlayerRating, PlayerRating]:
        """Both ratings after the games ``outcomes`` (the home player's view; an :class:`Outcome` or DI-engine's
        'wins'/'draws'/'losses'), applied in order."""
        a, b = home.elo, away.elo
        n = 0
        for outcome in outcomes:
            s = SCORE[Outcome(outcome)]
            e_a = expected_score(a, b, self.scale)
            a, b = a + self.k_factor * (s - e_a), b + self.k_factor * ((1.0 - s) - (1.0 - e_a))
            n += 1
        return PlayerRating(a, home.games + n), PlayerRating(b, away.games + n)

    def rate_1vsC(self, home: PlayerRating, constant: PlayerRating,  # noqa: N802 (DI-engine's name)
                  outcomes: Iterable[Outcome | str]) -> PlayerRating:
        """``home``'s rating after games against an opponent whose rating stays fixed (a scripted bot, a reference)."""
        a = home.elo
        n = 0
        for outcome in outcomes:
            a += self.k_factor * (SCORE[Outcome(outcome)] - expected_score(a, constant.elo, self.scale))
            n += 1
        return PlayerRating(a, home.games + n)
