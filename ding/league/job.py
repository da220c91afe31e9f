"""The records a league hands out and takes back: the job it assigns (:class:`LeagueJob`) and the games' results
(:class:`JobResult`), built from DI-engine's job-info dicts where they enter."""
from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

from ding.utils import LeagueError


class Outcome(str, enum.Enum):
    """One game's result seen from the home (first) player; the values are DI-engine's result strings."""

    WIN = "wins"
    DRAW = "draws"
    LOSS = "losses"

    def reversed(self) -> Outcome:
        """The same game seen from the away player."""
        return {Outcome.WIN: Outcome.LOSS, Outcome.LOSS: Outcome.WIN, Outcome.DRAW: Outcome.DRAW}[self]


@dataclass(frozen=True)
class LeagueJob:
    """What the league asks one job to play. ``job['player_id']`` style access is kept for DI-engine code."""

    launch_player: str
    player_id: tuple[str, ...]  # (launch player, opponent) for a collect job; (launch player,) for an eval job
    checkpoint_path: tuple[str, ...]  # the players' checkpoints, in the same order
    player_active_flag: tuple[bool, ...]  # whether each player is still training (its checkpoint changes)
    eval_opponent: str | None = None  # eval jobs: the built-in opponent's difficulty name

    @property
    def agent_num(self) -> int:
        return len(self.player_id)

    @property
    def eval_flag(self) -> bool:
        return self.eval_opponent is not None

    @property
    def opponent_id(self) -> str | None:
        return self.player_id[1] if len(self.player_id) > 1 else None

    def __getitem__(self, key: str) -> Any:
        if key == "agent_num":
            return self.agent_num
        if key in {f.name for f in fields(self)} and not (key == "eval_opponent" and self.eval_opponent is None):
            value = getattr(self, key)
            return list(value) if isinstance(value, tuple) else value
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        """DI-engine's job-info dict (lists, ``agent_num``; ``eval_opponent`` for eval jobs only)."""
        keys = ["agent_num", "launch_player", "player_id", "checkpoint_path", "player_active_flag"]
        if self.eval_flag:
            keys.append("eval_opponent")
        return {k: self[k] for k in keys}


@dataclass(frozen=True)
class JobResult:
    """The outcomes of the games one job played between two players (home's view), in the order they ended."""

    home_id: str
    away_id: str
    outcomes: tuple[Outcome, ...]
    eval_flag: bool = False

    @classmethod
    def from_job_info(cls, job_info: JobResult | Mapping[str, Any], where: str = "job_info") -> JobResult:
        """Read DI-engine's finished-job dict: ``player_id`` = [home, away] and ``result``, a list of result
        strings ('wins'/'draws'/'losses'), or a list of such lists (one per episode round, one entry per env).
        Anything else raises one :class:`LeagueError` naming the field."""
        if isinstance(job_info, JobResult):
            return job_info
        if not isinstance(job_info, Mapping):
            raise LeagueError(f"{where}: expected a dict with 'player_id' and 'result', got {type(job_info).__name__}")
        ids = job_info.get("player_id")
        if (not isinstance(ids, Sequence) or isinstance(ids, str) or len(ids) != 2
                or not all(isinstance(i, str) for i in ids)):
            raise LeagueError(f"{where}.player_id: expected [home_id, away_id] (two player id strings), "
                              f"got {ids!r:.80}")
        raw = job_info.get("result")
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise LeagueError(f"{where}.result: expected a list of 'wins'/'draws'/'losses' (or a list of such lists), "
                              f"got {raw!r:.80}")
        flat: list[Any] = []
        for item in raw:
            if isinstance(item, Sequence) and not isinstance(item, str):
                flat.extend(item)
            else:
                flat.append(item)
        outcomes = []
        for i, r in enumerate(flat):
            try:
                outcomes.append(Outcome(r))
            except ValueError:
                raise LeagueError(f"{where}.result[{i}]: {r!r:.40} is not one of 'wins', 'draws', 'losses'") from None
        eval_flag = job_info.get("eval_flag", False)
        if not isinstance(eval_flag, bool):
            raise LeagueError(f"{where}.eval_flag: expected a bool, got {eval_flag!r:.40}")
        return cls(ids[0], ids[1], tuple(outcomes), eval_flag)
