"""The league: its players, payoff table and ratings; jobs out, results in; snapshots, resets, and its saved state."""
from __future__ import annotations

import copy
import json
import os
import threading
import uuid
from abc import abstractmethod
from typing import Any, Callable, ClassVar, Mapping

import numpy as np
from easydict import EasyDict

from ding.config import find_config_problems
from ding.config.validation import format_problems
from ding.utils import (
    LEAGUE_REGISTRY,
    PLAYER_REGISTRY,
    CheckpointError,
    ConfigError,
    LeagueError,
    atomic_write,
    atomic_write_text,
    deep_merge_dicts,
    import_module,
    read_regular_file,
)

from .job import JobResult, LeagueJob
from .metric import create_metric_env, rating_from_state
from .player import ActivePlayer, HistoricalPlayer, Player, create_player
from .shared_payoff import create_payoff

_MAX_CHECKPOINT_BYTES = 1 << 32  # a player checkpoint copied by the league (read as a regular file only)
STATE_VERSION = 1


class BaseLeague:
    """Players of one league, the payoff table between them and their Elo ratings.

    A training loop asks :meth:`get_job_info` whom a player should play, reports the games with :meth:`finish_job`
    and the player's progress with :meth:`update_active_player`, and calls :meth:`judge_snapshot` to freeze a copy
    of a player that is trained enough (then maybe reset it, see :meth:`mutate`). Every random choice draws from the
    league's own generator (seeded by ``seed``), which :meth:`save_state` keeps with everything else, so a league
    loaded with :meth:`load_state` makes the same choices an uninterrupted one would. Thread-safe.
    """

    # DI-engine's league keys; each active player type also gets its section (e.g. ``main_player``), see
    # ``default_config``.
    config: ClassVar[dict[str, Any]] = dict(
        league_type="base",
        import_names=["ding.league"],
        player_category=["default"],  # one set of active players per category (e.g. a StarCraft race)
        path_policy=None,  # directory of the players' checkpoints (required; created if missing)
        active_players=dict(),  # {player type: count}; empty means one 'naive_sp_player'
        use_pretrain=False,  # start every active player from pretrain_checkpoint_path[category]
        use_pretrain_init_historical=False,  # add the pretrained model as each category's first historical player
        pretrain_checkpoint_path=dict(default="default_cate_pretrain.pth"),  # {category: checkpoint}
        seed=0,  # seed of the league's opponent choices and resets (a seed passed to the league wins)
        # the chance that a job plays the env's fixed opponent (e.g. a scripted player) instead of the league's
        # choice (serial_pipeline_battle; the one_vs_one commander in parallel mode); those games stay out of the
        # payoff table (the opponent is no player)
        fixed_opponent_prob=0.0,
        payoff=dict(
            type="battle",  # the only payoff type
            decay=0.99,  # every game first multiplies the pair's counts by this
            min_win_rate_games=8,  # below this many (decayed) games the win rate is 0.5
        ),
        metric=dict(
            # 'elo' | 'trueskill'; None: TrueSkill if any TrueSkill key below is set (DI-engine's configs set them),
            # else Elo. TrueSkill needs the trueskill package (pip install 'ding[league]').
            type=None,
            # TrueSkill (trueskill.TrueSkill's arguments; None: the package's default). DI-engine's configs use
            # mu=0, sigma=25/3, beta=25/6, tau=0.0, draw_probability=0.02.
            mu=None, sigma=None, beta=None, tau=None, draw_probability=None,
            elo_init=1200.0,  # rating of a new player
            elo_k=32.0,  # Elo K factor: the most one game can move a rating (Elo ratings only)
        ),
    )
    # Sections whose keys are the user's own (categories, player types).
    open_config_keys: ClassVar[tuple[str, ...]] = ("active_players", "pretrain_checkpoint_path")

    @classmethod
    def default_config(cls) -> EasyDict:
        """``config`` plus one section per registered active player type (its ``config``)."""
        cfg = EasyDict(copy.deepcopy(cls.config))
        for name, player_cls in sorted(PLAYER_REGISTRY.items()):
            if isinstance(player_cls, type) and issubclass(player_cls, ActivePlayer) and name not in cfg:
                cfg[name] = copy.deepcopy(player_cls.config)
        cfg.cfg_type = cls.__name__ + "Dict"
        return cfg

    def __init__(self, cfg: Mapping[str, Any], load_checkpoint_fn: Callable[[str, str], None] | None = None,
                 seed: int | None = None) -> None:
        """``load_checkpoint_fn(player_id, path)`` loads a checkpoint into the model of a player that is reset
        (:meth:`mutate`); DI-engine's demo sets it afterwards as ``league.load_checkpoint``, which works too."""
        import_module(list(cfg.get("import_names") or []))
        default = self.default_config()
        problems = find_config_problems(cfg, default, self.open_config_keys, "league config", shown_path="league")
        if problems:
            raise ConfigError(format_problems(problems))
        self.cfg = deep_merge_dicts(default, cfg)
        if self.cfg.path_policy is None:
            raise ConfigError("league.path_policy: required, the directory where the players' checkpoints are kept "
                              "(e.g. '<exp_name>/policy')")
        self.path_policy = str(self.cfg.path_policy)
        prob = self.cfg.fixed_opponent_prob
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0.0 <= prob <= 1.0:
            raise ConfigError(f"league.fixed_opponent_prob: expected a probability in [0, 1], got {prob!r}")
        os.makedirs(self.path_policy, exist_ok=True)
        self.reset_checkpoint_path = os.path.join(self.path_policy, "reset_ckpt.pth")
        self.load_checkpoint = load_checkpoint_fn
        self.league_uid = str(uuid.uuid4())
        self._rng = np.random.default_rng(int(self.cfg.seed if seed is None else seed))
        self._lock = threading.RLock()
        self.payoff = create_payoff(self.cfg.payoff)
        self.metric_env = create_metric_env(self.cfg.metric)
        self.active_players: list[ActivePlayer] = []
        self.historical_players: list[HistoricalPlayer] = []
        self._init_players()

    # --- players --------------------------------------------------------------------------------------------------

    def _init_players(self) -> None:
        counts = dict(self.cfg.active_players) or {"naive_sp_player": 1}
        for ptype, n in counts.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ConfigError(f"league.active_players.{ptype}: expected a player count (int >= 0), got {n!r}")
            cls = PLAYER_REGISTRY.get(ptype, where=f"league.active_players.{ptype}")
            if not (isinstance(cls, type) and issubclass(cls, ActivePlayer)):
                raise ConfigError(f"league.active_players.{ptype}: {ptype!r} is not an active (trainable) player type")
        for cate in self.cfg.player_category:
            for ptype, n in counts.items():
                for i in range(n):
                    pid = f"{ptype}_{cate}_{i}"
                    ckpt = os.path.join(self.path_policy, f"{pid}_ckpt.pth")
                    player = create_player(self.cfg, ptype, self.cfg[ptype], cate, self.payoff, ckpt, pid, 0,
                                           self.metric_env.create_rating(), self._rng)
                    assert isinstance(player, ActivePlayer)
                    if self.cfg.use_pretrain:
                        self.save_checkpoint(self._pretrain_path(cate), ckpt)
                    self.active_players.append(player)
                    self.payoff.add_player(player)
        if not self.active_players:
            raise ConfigError("league.active_players: no active players; e.g. active_players=dict(main_player=1)")
        if self.cfg.use_pretrain_init_historical:
            for cate in self.cfg.player_category:
                parent = next((p for p in self.active_players if p.category == cate), self.active_players[0])
                hp = HistoricalPlayer(self.cfg[_registered_name(type(parent))], cate, self.payoff,
                                      self._pretrain_path(cate), f"{parent.player_id}_pretrain_historical", 0,
                                      self.metric_env.create_rating(), self._rng, parent_id=parent.player_id)
                self.historical_players.append(hp)
                self.payoff.add_player(hp)

    def _pretrain_path(self, category: str) -> str:
        paths = self.cfg.pretrain_checkpoint_path
        if category not in paths:
            raise ConfigError(f"league.pretrain_checkpoint_path: no checkpoint for category {category!r} "
                              f"(use_pretrain is on); add {category}='<path>'")
        return str(paths[category])

    @property
    def active_players_ids(self) -> list[str]:
        return [p.player_id for p in self.active_players]

    @property
    def active_players_ckpts(self) -> list[str]:
        return [p.checkpoint_path for p in self.active_players]

    def get_player_by_id(self, player_id: str) -> Player:
        with self._lock:
            for p in (*self.active_players, *self.historical_players):
                if p.player_id == player_id:
                    return p
        raise LeagueError(f"league: no player {player_id!r}; active players: {self.active_players_ids}, "
                          f"historical players: {[p.player_id for p in self.historical_players]}")

    def _active(self, player_id: str | None) -> ActivePlayer:
        if player_id is None:
            return self.active_players[0]
        for p in self.active_players:
            if p.player_id == player_id:
                return p
        raise LeagueError(f"league: {player_id!r} is not an active player; active players: {self.active_players_ids}")

    # --- jobs -----------------------------------------------------------------------------------------------------

    def get_job_info(self, player_id: str | None = None, eval_flag: bool = False) -> LeagueJob:
        """The next job of an active player (the first one if None): its opponent and both checkpoints."""
        with self._lock:
            return self._get_job_info(self._active(player_id), eval_flag)

    @abstractmethod
    def _get_job_info(self, player: ActivePlayer, eval_flag: bool = False) -> LeagueJob:
        raise NotImplementedError

    def draw_fixed_opponent(self) -> bool:
        """Whether the next job plays the env's fixed opponent instead of the league's choice: True with probability
        ``fixed_opponent_prob``, drawn from the league's generator (so a loaded league draws on as a saved one
        would)."""
        prob = float(self.cfg.fixed_opponent_prob)
        if prob <= 0.0:
            return False
        with self._lock:
            return bool(self._rng.random() < prob)

    def finish_job(self, job_info: JobResult | Mapping[str, Any]) -> None:
        """Count a finished job's games in the payoff table and update both players' Elo ratings (self-play games
        are counted but leave ratings alone). DI-engine's dict or a :class:`JobResult`; a bad one raises
        :class:`LeagueError` and changes nothing."""
        result = JobResult.from_job_info(job_info)
        with self._lock:
            home, away = self.get_player_by_id(result.home_id), self.get_player_by_id(result.away_id)
            self.payoff.update(result)
            if home is not away:
                home.rating, away.rating = self.metric_env.rate_1vs1(home.rating, away.rating, result.outcomes)

    def update_active_player(self, player_info: Mapping[str, Any]) -> bool:
        """Record an active player's progress: ``train_iteration`` (or DI-engine demo's ``learner_step``) sets its
        step count; ``eval_win`` True moves it to the next built-in eval opponent (returns whether it moved)."""
        if not isinstance(player_info, Mapping) or not isinstance(player_info.get("player_id"), str):
            raise LeagueError(f"update_active_player: expected a dict with a 'player_id' str, got {player_info!r:.80}")
        with self._lock:
            return self._update_player(self._active(player_info["player_id"]), player_info)

    def _update_player(self, player: ActivePlayer, player_info: Mapping[str, Any]) -> bool:
        """What :meth:`update_active_player` does to the player (a subclass may change it, as DI-engine's)."""
        for key in ("train_iteration", "learner_step"):
            if key in player_info:
                step = player_info[key]
                if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
                    raise LeagueError(f"update_active_player: {key} must be an int >= 0, got {step!r}")
                player.total_agent_step = int(step)
                return False
        if player_info.get("eval_win"):
            return player.increment_eval_difficulty()
        return False

    def judge_snapshot(self, player_id: str, force: bool = False) -> bool:
        """Freeze a copy of the player if it is trained enough (or ``force``): its checkpoint is copied to the
        historical player's path, the snapshot joins the payoff table, then the player may be reset
        (:meth:`mutate`). False when no snapshot was taken, including a second snapshot at the same step."""
        with self._lock:
            player = self._active(player_id)
            phase_mark = player.state_dict()["last_enough_step"]
            if not (force or player.is_trained_enough()):
                return False
            hp = player.snapshot(self.metric_env)
            if any(h.player_id == hp.player_id for h in self.historical_players):
                return False
            try:
                self.save_checkpoint(player.checkpoint_path, hp.checkpoint_path)
            except BaseException:
                player.load_state_dict(dict(player.state_dict(), last_enough_step=phase_mark))  # as if not judged
                raise
            self.historical_players.append(hp)
            self.payoff.add_player(hp)
            self._mutate_player(player)
            return True

    def mutate(self, player_id: str) -> str | None:
        """Ask the player whether to reset (main exploiters always do, league exploiters with ``mutate_prob``); if
        so, copy the reset checkpoint over its checkpoint, give it a fresh rating and call ``load_checkpoint``.
        Returns the checkpoint it was reset to, or None."""
        with self._lock:
            return self._mutate_player(self._active(player_id))

    def _mutate_player(self, player: ActivePlayer) -> str | None:
        target = player.mutate({"reset_checkpoint_path": self.reset_checkpoint_path})
        if target is None:
            return None
        self.save_checkpoint(target, player.checkpoint_path)
        player.rating = self.metric_env.create_rating()
        if self.load_checkpoint is not None:
            self.load_checkpoint(player.player_id, target)
        return target

    @staticmethod
    def save_checkpoint(src_checkpoint: str, dst_checkpoint: str) -> None:
        """Copy a checkpoint file (atomically: a crash leaves the old destination or the whole copy)."""
        try:
            data = read_regular_file(src_checkpoint, _MAX_CHECKPOINT_BYTES, "league: checkpoint")
        except FileNotFoundError:
            raise CheckpointError(f"league: checkpoint '{src_checkpoint}' does not exist; save the player's model "
                                  "there before a snapshot or reset (the reset checkpoint is the league's "
                                  "reset_checkpoint_path)") from None
        atomic_write(dst_checkpoint, data)

    def player_rank(self, string: bool = False) -> str | dict[str, float]:
        """Every player's Elo rating, best first (a table if ``string``)."""
        with self._lock:
            ranked = sorted(((p.player_id, p.rating.elo) for p in (*self.active_players, *self.historical_players)),
                            key=lambda x: -x[1])
        if not string:
            return dict(ranked)
        width = max(len(pid) for pid, _ in ranked)
        return "\n".join([f"{'player':<{width}}  elo"] + [f"{pid:<{width}}  {elo:.1f}" for pid, elo in ranked])

    # --- state ----------------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything the league's future depends on: players' progress and ratings, the snapshots, the payoff
        counts and the generator of its random choices (JSON-serialisable)."""
        with self._lock:
            return {
                "version": STATE_VERSION, "league_uid": self.league_uid,
                "rng": self._rng.bit_generator.state,
                "active": {p.player_id: p.state_dict() for p in self.active_players},
                "historical": [{"player_id": h.player_id, "parent_id": h.parent_id, "category": h.category,
                                "checkpoint_path": h.checkpoint_path, "total_agent_step": h.total_agent_step,
                                "rating": h.rating.to_state()} for h in self.historical_players],
                "payoff": self.payoff.state_dict(),
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict` of a league built from the same config (same active players)."""
        if state.get("version") != STATE_VERSION:
            raise LeagueError(f"league state: version {state.get('version')!r} is not {STATE_VERSION}, "
                              "the version this ding writes")
        with self._lock:
            saved = set(state["active"])
            if saved != set(self.active_players_ids):
                raise LeagueError(f"league state: its active players {sorted(saved)} differ from this league's "
                                  f"{sorted(self.active_players_ids)}; load it into a league built from the same "
                                  "config")
            for p in self.active_players:
                p.load_state_dict(state["active"][p.player_id])
            by_id = {p.player_id: p for p in self.active_players}
            historical = []
            for h in state["historical"]:
                parent = by_id.get(h["parent_id"], self.active_players[0])
                hp = HistoricalPlayer(self.cfg[_registered_name(type(parent))], h["category"], self.payoff,
                                      h["checkpoint_path"], h["player_id"], h["total_agent_step"],
                                      rating_from_state(h["rating"]), self._rng, parent_id=h["parent_id"])
                historical.append(hp)
            self.historical_players = historical
            self.payoff.replace_players([*self.active_players, *historical])
            self.payoff.load_state_dict(state["payoff"])
            self._rng.bit_generator.state = state["rng"]
            self.league_uid = str(state["league_uid"])

    def save_state(self, path: str) -> None:
        """Write :meth:`state_dict` to ``path`` as JSON, atomically."""
        atomic_write_text(path, json.dumps(self.state_dict()))

    def load_state(self, path: str) -> None:
        """Read a state written by :meth:`save_state` (see :meth:`load_state_dict`)."""
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
        except FileNotFoundError:
            raise CheckpointError(f"league state file '{path}' does not exist") from None
        except json.JSONDecodeError as e:
            raise CheckpointError(f"league state file '{path}' is not valid JSON ({e}); it was not written by "
                                  "save_state or is damaged") from None
        self.load_state_dict(state)


def _registered_name(cls: type) -> str:
    for name, obj in PLAYER_REGISTRY.items():
        if obj is cls:
            return name
    raise LeagueError(f"league: player class {cls.__qualname__} is not registered in PLAYER_REGISTRY")


def create_league(cfg: Mapping[str, Any], *args: Any, **kwargs: Any) -> BaseLeague:
    """The league registered as ``cfg.league_type`` (default 'one_vs_one'), after importing ``cfg.import_names``."""
    import_module(list(cfg.get("import_names") or []))
    league_type = cfg.get("league_type", "one_vs_one")
    return LEAGUE_REGISTRY.get(league_type, where="league.league_type")(cfg, *args, **kwargs)
