"""Ratings of the league's players: Elo (the default, below) or TrueSkill (:mod:`ding.league.trueskill_metric`, on the
``trueskill`` package of the ``league`` extra, chosen by :func:`create_metric_env`).

Player A's expected score against B is ``E_A = 1 / (1 + 10 ** ((R_B - R_A) / scale))`` (``scale`` = 400, the usual
chess scale: a 400-point lead means an expected score of 10/11). After one game with score ``S_A`` (win 1, draw 0.5,
loss 0), ``R_A += K * (S_A - E_A)`` and ``R_B += K * ((1 - S_A) - E_B)``. ``K`` (``elo_k``, default 32) bounds the
change one game can make; games are applied one at a time, in order. Ratings are floats (not rounded).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ding.utils import ConfigError

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

    def copy(self) -> PlayerRating:
        return PlayerRating(self.elo, self.games)

    def to_state(self) -> list[float]:
        return [self.elo, self.games]


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


# DI-engine's Elo helpers (its ``EloCalculator``): integer ratings, result 1 win / 0 draw / -1 loss of A, and
# ``beta`` half the usual 400-point scale.
_ELO_SCORE = {1: 1.0, 0: 0.5, -1: 0.0}


def get_elo(rating_a: float, rating_b: float, result: int, k_factor: float = 32, beta: float = 200) -> tuple[int, int]:
    """Both Elo ratings, rounded, after one game of A against B (``result``: 1 A wins, 0 draw, -1 B wins)."""
    if result not in _ELO_SCORE:
        raise ValueError(f"get_elo: result must be 1 (A wins), 0 (draw) or -1 (B wins), got {result!r}")
    expect_a = 1.0 / (1.0 + math.pow(10, (rating_b - rating_a) / (2.0 * beta)))
    score = _ELO_SCORE[result]
    new_a = rating_a + k_factor * (score - expect_a)
    new_b = rating_b + k_factor * ((1.0 - score) - (1.0 - expect_a))
    return round(new_a), round(new_b)


def get_elo_array(rating: np.ndarray, result: np.ndarray, game_count: np.ndarray, k_factor: int = 32,
                  beta: int = 200) -> np.ndarray:
    """Every player's rounded Elo rating after a round of games: ``rating`` (N,), ``result[i, j]`` i's mean result
    against j in [-1, 1], ``game_count[i, j]`` how many games they played (N, N)."""
    rating = np.asarray(rating, dtype=np.float64)
    diff = rating[None, :] - rating[:, None]
    expect = game_count / (1.0 + np.power(10.0, diff / (2.0 * beta)))
    delta = (((np.asarray(result) + 1.0) / 2.0 - expect) * (np.asarray(game_count) > 0)).sum(axis=1)
    return np.round(rating + k_factor * delta).astype(np.int64)


# Keys of DI-engine's ``league.metric`` that only TrueSkill reads; a config that sets any of them asks for TrueSkill.
TRUESKILL_KEYS = ("mu", "sigma", "beta", "tau", "draw_probability")


def create_metric_env(cfg: Mapping[str, Any]) -> Any:
    """The rating system ``league.metric`` asks for: ``type`` 'elo' or 'trueskill'; without ``type``, TrueSkill when
    any of DI-engine's TrueSkill keys is set (as DI-engine's configs do), else Elo."""
    kind = cfg.get("type")
    if kind is None:
        kind = "trueskill" if any(cfg.get(k) is not None for k in TRUESKILL_KEYS) else "elo"
    if kind == "elo":
        return EloRating(cfg.get("elo_init", 1200.0), cfg.get("elo_k", 32.0))
    if kind != "trueskill":
        raise ValueError(f"league.metric.type: {kind!r} is not 'elo' or 'trueskill'")
    require_trueskill([k for k in TRUESKILL_KEYS if cfg.get(k) is not None] or ["type"])
    from .trueskill_metric import LeagueMetricEnv

    params = {k: cfg[k] for k in TRUESKILL_KEYS if cfg.get(k) is not None}
    return LeagueMetricEnv(**params, elo_init=cfg.get("elo_init", 1200.0))


def require_trueskill(keys: Sequence[str]) -> None:
    """Raise one :class:`ConfigError` naming ``league.metric.<key>`` when the ``trueskill`` package is absent."""
    try:
        import trueskill  # noqa: F401
    except ImportError:
        where = f"league.metric.{keys[0]}" if keys else "league state"
        raise ConfigError(f"{where}: TrueSkill ratings (DI-engine's league.metric keys {', '.join(TRUESKILL_KEYS)}) "
                          "need the trueskill package: pip install 'ding[league]'; or set league.metric.type='elo' "
                          "to rate players by Elo") from None


def rating_from_state(state: Sequence[float]) -> Any:
    """A rating back from its ``to_state()`` list: ``[elo, games]`` (Elo) or ``[elo, games, mu, sigma]`` (TrueSkill)."""
    if len(state) == 2:
        return PlayerRating(float(state[0]), int(state[1]))
    require_trueskill([])
    from .trueskill_metric import TrueSkillRating

    return TrueSkillRating(float(state[2]), float(state[3]), float(state[0]), int(state[1]))


def __getattr__(name: str) -> Any:
    # DI-engine's TrueSkill names at its path, imported only when used (the ``league`` extra)
    if name in ("LeagueMetricEnv", "TrueSkillRating"):
        from . import trueskill_metric

        return getattr(trueskill_metric, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
