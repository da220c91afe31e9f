"""The payoff table shared by a league's players: decayed win/draw/loss counts per pair of players."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

import numpy as np

from ding.utils import ConfigError, LeagueError

from .job import JobResult, Outcome

if TYPE_CHECKING:
    from .player import Player

PlayerRef = Union["Player", str]


@dataclass
class BattleRecord:
    """Decayed counts of the games between two players, seen from the first id of the pair's key."""

    wins: float = 0.0
    draws: float = 0.0
    losses: float = 0.0
    games: float = 0.0

    def add(self, outcome: Outcome, decay: float) -> None:
        """Decay every count, then count one more game."""
        self.wins *= decay
        self.draws *= decay
        self.losses *= decay
        self.games = self.games * decay + 1.0
        if outcome is Outcome.WIN:
            self.wins += 1.0
        elif outcome is Outcome.DRAW:
            self.draws += 1.0
        else:
            self.losses += 1.0


class BattleRecordDict(dict):
    """DI-engine's record of two players' games as a dict ``{'wins', 'draws', 'losses', 'games'}`` (all 0 at first);
    ``record * decay`` is a decayed copy. ding's payoff keeps :class:`BattleRecord`; this is for code written
    against DI-engine's."""

    data_keys = ("wins", "draws", "losses", "games")

    def __init__(self) -> None:
        super().__init__({k: 0 for k in self.data_keys})

    def __mul__(self, decay: float) -> BattleRecordDict:
        out = BattleRecordDict()
        out.update({k: v * decay if k in self.data_keys else v for k, v in self.items()})
        return out


class BattleSharedPayoff:
    """Win rates between every pair of players, from the outcomes of their games.

    Each game first multiplies the pair's counts by ``decay`` (recent games weigh more), then adds itself. The win rate
    of home against away is ``(wins + draws / 2) / games``; while the pair's decayed game count is below
    ``min_win_rate_games`` (including pairs that never met) it is 0.5, the no-information value. Games of a player
    against itself count as draws. With ``decay < 1``
    the count can never exceed ``1 / (1 - decay)``, so a threshold at or above that is refused (the win rate would
    stay 0.5 for ever).
    """

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        decay = float(cfg.get("decay", 0.99))
        min_games = float(cfg.get("min_win_rate_games", 8))
        if not 0.0 < decay <= 1.0:
            raise ConfigError(f"league.payoff.decay: must be in (0, 1], got {decay}")
        if min_games < 0:
            raise ConfigError(f"league.payoff.min_win_rate_games: must be >= 0, got {min_games}")
        if decay < 1.0 and min_games >= 1.0 / (1.0 - decay):
            raise ConfigError(
                f"league.payoff.min_win_rate_games: {min_games:g} games can never be reached with decay={decay} "
                f"(the decayed game count stays below 1 / (1 - decay) = {1.0 / (1.0 - decay):.4g}); lower "
                "min_win_rate_games or raise decay")
        self._decay, self._min_games = decay, min_games
        self._players: list[Player] = []
        self._ids: set[str] = set()
        self._records: dict[tuple[str, str], BattleRecord] = {}
        self._lock = threading.RLock()

    @property
    def players(self) -> list[Player]:
        """Every player in the table (a copy of the list), in the order they joined."""
        with self._lock:
            return list(self._players)

    def add_player(self, player: Player) -> None:
        with self._lock:
            if player.player_id in self._ids:
                raise LeagueError(f"payoff: a player with id {player.player_id!r} is already in the table")
            self._players.append(player)
            self._ids.add(player.player_id)

    def replace_players(self, players: Sequence[Player]) -> None:
        """Make ``players`` the table's players, in this order (a league restoring its saved state)."""
        ids = [p.player_id for p in players]
        if len(set(ids)) != len(ids):
            raise LeagueError(f"payoff: duplicate player ids in {ids}")
        with self._lock:
            self._players, self._ids = list(players), set(ids)

    @staticmethod
    def get_key(home: str, away: str) -> tuple[tuple[str, str], bool]:
        """The pair's key (the two ids in sorted order) and whether home is the second one (results reversed)."""
        return ((home, away), False) if home <= away else ((away, home), True)

    def record(self, home: PlayerRef, away: PlayerRef) -> BattleRecord:
        """A copy of the counts of home against away, from home's view (zeros for a pair that never met)."""
        key, reverse = self.get_key(_id(home), _id(away))
        with self._lock:
            r = self._records.get(key, BattleRecord())
            return BattleRecord(r.losses, r.draws, r.wins, r.games) if reverse else BattleRecord(**vars(r))

    def win_rate(self, home: PlayerRef, away: PlayerRef) -> float:
        r = self.record(home, away)
        if r.games < self._min_games or r.games <= 0.0:
            return 0.5
        return (r.wins + 0.5 * r.draws) / r.games

    def __getitem__(self, players: tuple[PlayerRef | Sequence[PlayerRef], PlayerRef | Sequence[PlayerRef]]
                    ) -> np.ndarray:
        """Win rates of home against away; each side a player (or id) or a list. Shape (m, n) for m home and n away
        players, squeezed to (n,) or (m,) when a side is a single player (or a one-element list)."""
        home, away = players
        homes = [home] if isinstance(home, str) or not isinstance(home, Sequence) else list(home)
        aways = [away] if isinstance(away, str) or not isinstance(away, Sequence) else list(away)
        with self._lock:
            rates = np.array([[self.win_rate(h, a) for a in aways] for h in homes], dtype=np.float64)
        if len(homes) == 1 or len(aways) == 1:
            rates = rates.reshape(-1)
        return rates

    def update(self, job_info: JobResult | Mapping[str, Any]) -> bool:
        """Count the games of a finished job (DI-engine's dict or a :class:`JobResult`); True when counted.

        The result is checked whole before anything changes: a bad one raises :class:`LeagueError` and leaves the
        table as it was.
        """
        result = JobResult.from_job_info(job_info)
        with self._lock:
            for pid in (result.home_id, result.away_id):
                if pid not in self._ids:
                    raise LeagueError(f"job_info.player_id: no player {pid!r} in the payoff table "
                                      f"(players: {sorted(self._ids)})")
            key, reverse = self.get_key(result.home_id, result.away_id)
            rec = self._records.setdefault(key, BattleRecord())
            self_play = result.home_id == result.away_id
            for outcome in result.outcomes:
                # A player against itself wins exactly as often as it loses: self-play games count as draws.
                rec.add(Outcome.DRAW if self_play else outcome.reversed() if reverse else outcome, self._decay)
        return True

    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"records": [[a, b, r.wins, r.draws, r.losses, r.games] for (a, b), r in self._records.items()]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        records = {}
        for row in state["records"]:
            a, b, wins, draws, losses, games = row
            records[(str(a), str(b))] = BattleRecord(float(wins), float(draws), float(losses), float(games))
        with self._lock:
            self._records = records

    def __repr__(self) -> str:
        with self._lock:
            rows = [f"{a} vs {b}: wins {r.wins:.2f} draws {r.draws:.2f} losses {r.losses:.2f} games {r.games:.2f}"
                    for (a, b), r in sorted(self._records.items())]
        return "BattleSharedPayoff(\n  " + "\n  ".join(rows) + "\n)" if rows else "BattleSharedPayoff()"


def _id(player: PlayerRef) -> str:
    return player if isinstance(player, str) else player.player_id


def create_payoff(cfg: Mapping[str, Any]) -> BattleSharedPayoff:
    """The payoff named by ``cfg.type`` (only 'battle', as in DI-engine)."""
    kind = cfg.get("type", "battle")
    if kind != "battle":
        raise ConfigError(f"league.payoff.type: unknown payoff type {kind!r}; the only one is 'battle'")
    return BattleSharedPayoff(cfg)
