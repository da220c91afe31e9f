"""AlphaStar's three active player types: the main player, the main exploiter and the league exploiter."""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

from ding.utils import PLAYER_REGISTRY

from .player import ActivePlayer, HistoricalPlayer, Player


def _is_historical(p: Player) -> bool:
    return isinstance(p, HistoricalPlayer)


@PLAYER_REGISTRY.register("main_player")
class MainPlayer(ActivePlayer):
    """The player the league exists to train. Branches: 'pfsp' (any historical player, weighted 'squared'), 'sp'
    (a main player, or one of its snapshots weighted 'variance' while it is too strong), 'verification' (the
    snapshots of main exploiters it still loses to, or past main players it has forgotten how to beat; else 'sp').
    Never reset."""

    default_branch_probs: ClassVar[dict[str, float]] = dict(pfsp=0.5, sp=0.5)

    @classmethod
    def branch_names(cls) -> tuple[str, ...]:
        return ("pfsp", "sp", "verification")

    def _branches(self) -> dict[str, Callable[[], Player]]:
        return {"pfsp": self._pfsp_branch, "sp": self._sp_branch, "verification": self._verification_branch}

    def _pfsp_branch(self) -> Player:
        """A historical player by PFSP ('squared'); self-play while there is none yet."""
        return self._pfsp_opponent(self._get_players(_is_historical), "squared", self)

    def _sp_branch(self) -> Player:
        """A main player (itself, with one main player); if that one wins too often against this player, one of
        its snapshots instead, weighted 'variance' (similar strength first)."""
        main = self._get_opponent(self._get_players(lambda p: isinstance(p, MainPlayer)))
        if self._payoff[self, main] > 1.0 - self.settings.strong_win_rate:
            return main
        past = self._snapshots_of(main.player_id)
        return self._pfsp_opponent(past, "variance", main)

    def _verification_branch(self) -> Player:
        """Check for exploitation (main-exploiter snapshots it loses to) and forgetting (own past it no longer
        beats); with neither, plain 'sp'."""
        exploiter_ids = [p.player_id for p in self._get_players(lambda p: isinstance(p, MainExploiter))]
        exploiters = self._snapshots_of(*exploiter_ids)
        if exploiters and self._payoff[self, exploiters].min() < 1.0 - self.settings.strong_win_rate:
            return self._pfsp_opponent(exploiters, "squared", self)
        main = self._get_opponent(self._get_players(lambda p: isinstance(p, MainPlayer)))
        past = self._snapshots_of(main.player_id)
        if past and self._payoff[self, past].min() < self.settings.strong_win_rate:
            return self._pfsp_opponent(past, "squared", self)
        return self._sp_branch()

    def is_trained_enough(self, select_fn: Callable[[Player], bool] | None = None) -> bool:
        return super().is_trained_enough(select_fn or _is_historical)


@PLAYER_REGISTRY.register("main_exploiter")
class MainExploiter(ActivePlayer):
    """Finds the main players' weaknesses. Branch 'main_players': a main player, or (while it beats this exploiter
    too often to teach it anything, win rate < ``min_valid_win_rate``) one of its snapshots weighted 'variance'.
    Snapshotted when it beats the main players, then always reset."""

    config: ClassVar[dict[str, Any]] = dict(one_phase_step=10, branch_probs=dict(), strong_win_rate=0.7,
                                            min_valid_win_rate=0.3)
    default_branch_probs: ClassVar[dict[str, float]] = dict(main_players=1.0)

    @classmethod
    def branch_names(cls) -> tuple[str, ...]:
        return ("main_players",)

    def _branches(self) -> dict[str, Callable[[], Player]]:
        return {"main_players": self._main_players_branch}

    def _main_players_branch(self) -> Player:
        main = self._get_opponent(self._get_players(lambda p: isinstance(p, MainPlayer)))
        if self._payoff[self, main] >= self.settings.min_valid_win_rate:
            return main
        past = self._snapshots_of(main.player_id)
        return self._pfsp_opponent(past, "variance", main)

    def is_trained_enough(self, select_fn: Callable[[Player], bool] | None = None) -> bool:
        return super().is_trained_enough(select_fn or (lambda p: isinstance(p, MainPlayer)))

    def mutate(self, info: Mapping[str, Any]) -> str | None:
        """Always reset (to ``info['reset_checkpoint_path']``): each exploiter generation starts afresh."""
        return str(info["reset_checkpoint_path"])


@PLAYER_REGISTRY.register("league_exploiter")
class LeagueExploiter(ActivePlayer):
    """Finds strategies no one in the league beats. Branch 'pfsp': any historical player, weighted 'squared'.
    After each snapshot, reset with probability ``mutate_prob``."""

    config: ClassVar[dict[str, Any]] = dict(one_phase_step=10, branch_probs=dict(), strong_win_rate=0.7,
                                            mutate_prob=0.25)
    default_branch_probs: ClassVar[dict[str, float]] = dict(pfsp=1.0)

    @classmethod
    def branch_names(cls) -> tuple[str, ...]:
        return ("pfsp",)

    def _branches(self) -> dict[str, Callable[[], Player]]:
        return {"pfsp": self._pfsp_branch}

    def _pfsp_branch(self) -> Player:
        return self._pfsp_opponent(self._get_players(_is_historical), "squared", self)

    def is_trained_enough(self, select_fn: Callable[[Player], bool] | None = None) -> bool:
        return super().is_trained_enough(select_fn or _is_historical)

    def mutate(self, info: Mapping[str, Any]) -> str | None:
        if self._rng.uniform() < self.settings.mutate_prob:
            return str(info["reset_checkpoint_path"])
        return None
