"""TrueSkill ratings for the league, DI-engine's ``LeagueMetricEnv``, on the ``trueskill`` package (``league`` extra).

A rating is a Gaussian belief (``mu``, ``sigma``) about a player's skill; ``exposure`` (``mu - 3 sigma``, the
conservative estimate the league ranks by) starts low and rises as games pin the skill down. As DI-engine does, an
integer Elo rating (:func:`ding.league.metric.get_elo`) is kept beside it, so Elo-reading code works either way.
"""
from __future__ import annotations

from typing import Any, Iterable

try:
    import trueskill
except ImportError as e:  # pragma: no cover - exercised in a venv without the extra
    raise ImportError("ding.league.LeagueMetricEnv (TrueSkill ratings) needs the trueskill package: "
                      "pip install 'ding[league]'") from e

from .job import Outcome
from .metric import get_elo


class TrueSkillRating(trueskill.Rating):
    """A player's TrueSkill rating, with DI-engine's Elo beside it and the number of rated games."""

    def __init__(self, mu: float | None = None, sigma: float | None = None, elo_init: float | None = None,
                 games: int = 0) -> None:
        super().__init__(mu, sigma)
        self.elo = 1200 if elo_init is None else elo_init
        self.games = games

    @property
    def exposure(self) -> float:  # (trueskill's deprecated property, same value)
        return self.mu - 3.0 * self.sigma

    def copy(self) -> TrueSkillRating:
        return TrueSkillRating(self.mu, self.sigma, self.elo, self.games)

    def to_state(self) -> list[float]:
        return [self.elo, self.games, self.mu, self.sigma]

    def __repr__(self) -> str:
        return (f"TrueSkillRating(mu={self.mu:.3f}, sigma={self.sigma:.3f}, exposure={self.exposure:.3f}, "
                f"elo={self.elo:.0f})")


class LeagueMetricEnv(trueskill.TrueSkill):
    """A TrueSkill environment (``mu``, ``sigma``, ``beta``, ``tau``, ``draw_probability`` as in ``trueskill``) whose
    ratings carry an Elo rating too (starting at ``elo_init``)."""

    def __init__(self, *args: Any, elo_init: float = 1200, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.elo_init = elo_init

    def create_rating(self, mu: float | None = None, sigma: float | None = None,
                      elo_init: float | None = None) -> TrueSkillRating:
        return TrueSkillRating(self.mu if mu is None else mu, self.sigma if sigma is None else sigma,
                               self.elo_init if elo_init is None else elo_init)

    def _rate_game(self, winner: TrueSkillRating, loser: TrueSkillRating,
                   drawn: bool = False) -> tuple[TrueSkillRating, TrueSkillRating]:
        (won,), (lost,) = self.rate([(winner,), (loser,)], ranks=[0, 0] if drawn else [0, 1])
        elo_w, elo_l = get_elo(winner.elo, loser.elo, 0 if drawn else 1)
        return (TrueSkillRating(won.mu, won.sigma, elo_w, winner.games + 1),
                TrueSkillRating(lost.mu, lost.sigma, elo_l, loser.games + 1))

    def rate_1vs1(self, team1: TrueSkillRating, team2: TrueSkillRating,
                  result: Iterable[Outcome | str] | None = None,
                  **kwargs: Any) -> tuple[TrueSkillRating, TrueSkillRating]:
        """Both ratings after games of ``team1`` against ``team2``, each result ('wins' / 'draws' / 'losses', team1's
        view) applied in order; without ``result``, one game that team1 won (``drawn=True``: drawn)."""
        if result is None:
            return self._rate_game(team1, team2, drawn=bool(kwargs.get("drawn", False)))
        return self._rate_games(team1, team2, result, fixed_team2=False)

    def rate_1vsC(self, team1: TrueSkillRating, team2: TrueSkillRating,  # noqa: N802 (DI-engine's name)
                  result: Iterable[Outcome | str]) -> TrueSkillRating:
        """``team1``'s rating after games against an opponent whose rating stays fixed (a scripted bot)."""
        return self._rate_games(team1, team2, result, fixed_team2=True)[0]

    def _rate_games(self, team1: TrueSkillRating, team2: TrueSkillRating, result: Iterable[Outcome | str],
                    fixed_team2: bool) -> tuple[TrueSkillRating, TrueSkillRating]:
        for r in result:
            outcome = _outcome(r)
            if outcome is Outcome.LOSS:
                new2, team1 = self._rate_game(team2, team1)
            else:
                team1, new2 = self._rate_game(team1, team2, drawn=outcome is Outcome.DRAW)
            team2 = team2 if fixed_team2 else new2
        return team1, team2


def _outcome(r: Outcome | str) -> Outcome:
    try:
        return Outcome(r)
    except ValueError:
        raise ValueError(f"LeagueMetricEnv: invalid result {r!r}; expected 'wins', 'draws' or 'losses'") from None
