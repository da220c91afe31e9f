"""League members: the base :class:`Player`, frozen :class:`HistoricalPlayer` snapshots, trainable
:class:`ActivePlayer` s (how they judge themselves trained enough and choose opponents), and the plain
self-play player ``naive_sp_player``."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np

from ding.utils import PLAYER_REGISTRY, ConfigError, import_module

from .algorithm import pfsp
from .metric import EloRating, PlayerRating, rating_from_state
from .shared_payoff import BattleSharedPayoff


@dataclass(frozen=True)
class PlayerConfig:
    """An active player type's settings, read once from its league config section (e.g. ``league.main_player``)."""

    one_phase_step: int  # train iterations of one phase: trained enough after 2 phases, or after 1 if strong
    branch_probs: tuple[tuple[str, float], ...]  # (branch name, probability), summing to 1
    strong_win_rate: float  # win rate above which the player counts as strong against an opponent
    min_valid_win_rate: float = 0.3  # main exploiter: below this win rate the main player teaches it nothing
    mutate_prob: float = 0.0  # league exploiter: chance to be reset after each snapshot

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, Any], player_cls: type[ActivePlayer], where: str) -> PlayerConfig:
        """Read and check a player section; ``where`` names it in errors (e.g. ``league.main_player``)."""
        def number(key: str, default: float | None = None) -> float:
            value = cfg.get(key, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{where}.{key}: expected a number, got {value!r}")
            return float(value)

        step = number("one_phase_step")
        if step < 1 or step != int(step):
            raise ConfigError(f"{where}.one_phase_step: expected a whole number >= 1 (train iterations), got {step:g}")
        probs = cfg.get("branch_probs") or player_cls.default_branch_probs
        if not isinstance(probs, Mapping):
            raise ConfigError(f"{where}.branch_probs: expected a dict {{branch: probability}}, got {probs!r}")
        valid = player_cls.branch_names()
        for name, p in probs.items():
            if name not in valid:
                raise ConfigError(f"{where}.branch_probs.{name}: {player_cls.__name__} has no branch {name!r}; "
                                  f"its branches are {', '.join(valid)}")
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                raise ConfigError(f"{where}.branch_probs.{name}: expected a probability in [0, 1], got {p!r}")
        total = sum(float(p) for p in probs.values())
        if abs(total - 1.0) > 1e-6:
            raise ConfigError(f"{where}.branch_probs: probabilities must sum to 1, got {total:g} ({dict(probs)})")
        rates = {k: number(k, d) for k, d in (("strong_win_rate", 0.7), ("min_valid_win_rate", 0.3),
                                               ("mutate_prob", 0.0))}
        for key, value in rates.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{where}.{key}: expected a value in [0, 1], got {value:g}")
        return cls(int(step), tuple((str(k), float(v)) for k, v in probs.items()), rates["strong_win_rate"],
                   rates["min_valid_win_rate"], rates["mutate_prob"])


class Player:
    """A league member: id, category, checkpoint, training progress and rating, and the shared payoff table."""

    def __init__(self, cfg: Mapping[str, Any], category: str, init_payoff: BattleSharedPayoff, checkpoint_path: str,
                 player_id: str, total_agent_step: int, rating: PlayerRating,
                 rng: np.random.Generator | None = None) -> None:
        if not isinstance(player_id, str) or not player_id:
            raise ValueError(f"Player: player_id must be a non-empty str, got {player_id!r}")
        self._cfg = cfg
        self._category = category
        self._payoff = init_payoff
        self._checkpoint_path = checkpoint_path
        self._player_id = player_id
        self._total_agent_step = int(total_agent_step)
        self._rating = rating
        # The league passes its own generator so that opponent choices are reproducible and saved with its state.
        self._rng = rng if rng is not None else np.random.default_rng()

    @property
    def category(self) -> str:
        return self._category

    @property
    def payoff(self) -> BattleSharedPayoff:
        return self._payoff

    @property
    def checkpoint_path(self) -> str:
        return self._checkpoint_path

    @property
    def player_id(self) -> str:
        return self._player_id

    @property
    def total_agent_step(self) -> int:
        return self._total_agent_step

    @total_agent_step.setter
    def total_agent_step(self, step: int) -> None:
        self._total_agent_step = int(step)

    @property
    def rating(self) -> PlayerRating:
        return self._rating

    @rating.setter
    def rating(self, rating: PlayerRating) -> None:
        self._rating = rating

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._player_id!r}, step={self._total_agent_step}, elo={self._rating.elo:.1f})"


@PLAYER_REGISTRY.register("historical_player")
class HistoricalPlayer(Player):
    """A frozen snapshot of an active player (its ``parent_id``): its checkpoint never changes."""

    def __init__(self, *args: Any, parent_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parent_id = parent_id

    @property
    def parent_id(self) -> str:
        return self._parent_id


class ActivePlayer(Player):
    """A player being trained: it chooses its opponents, is snapshotted when trained enough, and may be reset."""

    # The config section of this player type in the league config (branch_probs empty: ``default_branch_probs``).
    config: ClassVar[dict[str, Any]] = dict(one_phase_step=10, branch_probs=dict(), strong_win_rate=0.7)
    default_branch_probs: ClassVar[dict[str, float]] = {}
    eval_opponent_difficulty: ClassVar[tuple[str, ...]] = ("RULE_BASED",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = PlayerConfig.from_cfg(self._cfg, type(self), f"league.{_type_name(type(self))}")
        self._last_enough_step = 0
        self._eval_opponent_index = 0

    @classmethod
    def branch_names(cls) -> tuple[str, ...]:
        """The opponent-choice branches this player type offers (keys of ``branch_probs``)."""
        return ()

    def _branches(self) -> dict[str, Callable[[], Player]]:
        return {}

    # --- snapshot and reset ---------------------------------------------------------------------------------------

    def is_trained_enough(self, select_fn: Callable[[Player], bool] | None = None) -> bool:
        """Whether to snapshot now: after two phases (``2 * one_phase_step`` iterations since the last time), or
        after one phase if the win rate against every player ``select_fn`` picks (default: historical players)
        exceeds ``strong_win_rate``. When it says yes, the phase count starts again."""
        select = select_fn or (lambda p: isinstance(p, HistoricalPlayer))
        passed = self._total_agent_step - self._last_enough_step
        phase = self.settings.one_phase_step
        if passed < phase:
            return False
        if passed < 2 * phase:
            opponents = self._get_players(select)
            if not opponents or self._payoff[self, opponents].min() <= self.settings.strong_win_rate:
                return False
        self._last_enough_step = self._total_agent_step
        return True

    def snapshot(self, metric_env: EloRating | None = None) -> HistoricalPlayer:
        """A historical copy of this player as it is now (the league copies the checkpoint file)."""
        root, ext = os.path.splitext(self._checkpoint_path)
        step = self._total_agent_step
        return HistoricalPlayer(self._cfg, self._category, self._payoff, f"{root}_{step}{ext or '.pth'}",
                                f"{self._player_id}_{step}_historical", step,
                                self._rating.copy(), self._rng,
                                parent_id=self._player_id)

    def mutate(self, info: Mapping[str, Any]) -> str | None:
        """The checkpoint to reset this player to after a snapshot (``info['reset_checkpoint_path']``), or None to
        keep training it as it is. The base player never resets."""
        return None

    # --- opponents ------------------------------------------------------------------------------------------------

    def get_job(self, eval_flag: bool = False) -> dict[str, Any]:
        """DI-engine's ``{'opponent': ...}``: a built-in difficulty name for evaluation, else a chosen player."""
        return {"opponent": self.eval_opponent if eval_flag else self.choose_opponent()}

    @property
    def _eval_opponent_difficulty(self) -> tuple[str, ...]:
        """DI-engine's name for :attr:`eval_opponent_difficulty` (its tests and subclasses read it)."""
        return self.eval_opponent_difficulty

    @property
    def eval_opponent(self) -> str:
        return self.eval_opponent_difficulty[self._eval_opponent_index]

    def choose_opponent(self) -> Player:
        """Draw a branch by ``branch_probs``, then let the branch choose the opponent."""
        names = [name for name, _ in self.settings.branch_probs]
        probs = np.array([p for _, p in self.settings.branch_probs])
        branch = names[int(self._rng.choice(len(names), p=probs / probs.sum()))]
        return self._branches()[branch]()

    def increment_eval_difficulty(self) -> bool:
        """Move to the next built-in evaluation opponent; False when already at the hardest."""
        if self._eval_opponent_index < len(self.eval_opponent_difficulty) - 1:
            self._eval_opponent_index += 1
            return True
        return False

    def _get_players(self, select_fn: Callable[[Player], bool]) -> list[Player]:
        return [p for p in self._payoff.players if select_fn(p)]

    def _snapshots_of(self, *parent_ids: str) -> list[Player]:
        """The historical players snapshotted from any of ``parent_ids``."""
        return [p for p in self._payoff.players if isinstance(p, HistoricalPlayer) and p.parent_id in parent_ids]

    def _get_opponent(self, players: Sequence[Player], p: np.ndarray | None = None) -> Player:
        return players[int(self._rng.choice(len(players), p=p))]

    def _pfsp_opponent(self, candidates: Sequence[Player], weighting: str, fallback: Player) -> Player:
        """One of ``candidates`` by PFSP on this player's win rates against them (``fallback`` if there are none)."""
        if not candidates:
            return fallback
        return self._get_opponent(candidates, pfsp(self._payoff[self, list(candidates)], weighting))

    # --- state ----------------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"total_agent_step": self._total_agent_step, "last_enough_step": self._last_enough_step,
                "eval_opponent_index": self._eval_opponent_index, "checkpoint_path": self._checkpoint_path,
                "rating": self._rating.to_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._total_agent_step = int(state["total_agent_step"])
        self._last_enough_step = int(state["last_enough_step"])
        self._eval_opponent_index = int(state["eval_opponent_index"])
        self._checkpoint_path = str(state["checkpoint_path"])
        self._rating = rating_from_state(state["rating"])


@PLAYER_REGISTRY.register("naive_sp_player")
class NaiveSpPlayer(ActivePlayer):
    """Plain self-play with PFSP over its own past: 'pfsp' (a historical player, squared weighting) or 'sp'
    (itself)."""

    default_branch_probs: ClassVar[dict[str, float]] = dict(pfsp=0.5, sp=0.5)

    @classmethod
    def branch_names(cls) -> tuple[str, ...]:
        return ("pfsp", "sp")

    def _branches(self) -> dict[str, Callable[[], Player]]:
        return {"pfsp": self._pfsp_branch, "sp": self._sp_branch}

    def _pfsp_branch(self) -> Player:
        """A historical player, weighted 'squared'; itself while there is none yet."""
        return self._pfsp_opponent(self._get_players(lambda p: isinstance(p, HistoricalPlayer)), "squared", self)

    def _sp_branch(self) -> Player:
        return self


def _type_name(cls: type) -> str:
    for name, obj in PLAYER_REGISTRY.items():
        if obj is cls:
            return name
    return cls.__name__


def create_player(cfg: Mapping[str, Any], player_type: str, *args: Any, **kwargs: Any) -> Player:
    """The player registered as ``player_type``, built with ``args``/``kwargs`` (``cfg.import_names`` imported
    first, so a custom player type can register itself)."""
    import_module(cfg.get("import_names", []))
    return PLAYER_REGISTRY.get(player_type, where="league.active_players")(*args, **kwargs)
