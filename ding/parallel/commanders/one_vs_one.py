"""OneVsOneCommander: the learner trains a league's main player, the league picks each collect task's opponent."""
from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
import threading
from collections.abc import Mapping
from typing import Any

from ding.config.ranges import at_least
from ding.parallel.commanders.solo import SoloCommander
from ding.parallel.files import POLICY_MAX_BYTES
from ding.parallel.protocol import (
    FIXED_OPPONENT,
    BattleJob,
    CollectResult,
    CollectTask,
    CommanderState,
    EvalResult,
    EvalTask,
    LearnerStarted,
    LearnInfo,
)
from ding.utils import COMMANDER_REGISTRY, ConfigError, DataFileError, LeagueError, atomic_write, read_regular_file

_logger = logging.getLogger("ding.commander.one_vs_one")


@COMMANDER_REGISTRY.register("one_vs_one")
class OneVsOneCommander(SoloCommander):
    """The solo commander plus a league of one active player: each collect task carries the league's job, its games
    go back to the league and the published policy is snapshotted as the main player (docs/league.md)."""

    config = dict(
        SoloCommander.config,
        snapshot_check_iters=10,  # judge a snapshot of the main player at most every this many train iterations
    )
    config_ranges = {"snapshot_check_iters": at_least(1, integer=True)}

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        league_cfg = cfg.policy.other.get("league")
        if not league_cfg:
            raise ConfigError("policy.other.league: the one_vs_one commander needs a league section (e.g. "
                              "league=dict(active_players=dict(main_player=1), ...)); see docs/league.md")
        self._league_cfg = copy.deepcopy(dict(league_cfg))
        self._snapshot_every = int(self._commander_cfg.get("snapshot_check_iters", 10))  # range: config_ranges
        self._league: Any = None
        self._main_id = ""
        self._path_policy = ""
        self._league_lock = threading.Lock()  # snapshots copy files: one at a time, outside the commander's lock
        self._checked_at = -math.inf  # learner step of the last snapshot judgement
        self._first_snapshot = False
        self._league_games = 0  # games of finished tasks counted in the league
        self._fixed_games = 0  # games of finished tasks against the fixed opponent (not in the league)

    # ---------------------------------------------------------------- the league
    def set_path_policy(self, path_policy: str) -> None:
        """Build the league; its players' checkpoints live in the run's policy directory."""
        from ding.league import create_league

        self._path_policy = path_policy
        league = create_league(dict(self._league_cfg, path_policy=path_policy))
        if len(league.active_players) != 1:
            raise ConfigError(f"policy.other.league.active_players: parallel mode trains one learner, so the league "
                              f"needs exactly one active player (e.g. dict(main_player=1)); this one has "
                              f"{len(league.active_players)} ({', '.join(league.active_players_ids)})")
        self._league = league
        self._main_id = league.active_players_ids[0]

    @property
    def league(self) -> Any:
        if self._league is None:
            raise RuntimeError("OneVsOneCommander: set_path_policy() builds the league first (the coordinator "
                               "calls it)")
        return self._league

    def _judge_snapshot(self, learner_step: int, force: bool = False) -> None:
        """Copy the published policy to the main player's checkpoint and let the league judge a snapshot."""
        league = self.league
        src = os.path.join(self._path_policy, self._policy_id)
        with self._league_lock:
            league.update_active_player({"player_id": self._main_id, "train_iteration": int(learner_step)})
            try:  # the learner's file in the shared directory: a regular file only, capped (never a FIFO's wait)
                data = read_regular_file(src, POLICY_MAX_BYTES, "the published policy")
            except (FileNotFoundError, DataFileError) as e:
                if isinstance(e, DataFileError):
                    _logger.warning(f"league: no snapshot this time: {e}")
                with self._lock:
                    self._first_snapshot = bool(league.historical_players)  # nothing (usable) published: try again
                    self._checked_at = -math.inf
                return
            main = league.get_player_by_id(self._main_id)
            atomic_write(main.checkpoint_path, data)
            if league.judge_snapshot(self._main_id, force=force):
                snap = league.historical_players[-1]
                _logger.info(f"league: snapshot {snap.player_id} of {self._main_id} at train_iter {learner_step}")

    def learner_started(self, task_id: str, info: LearnerStarted) -> None:
        super().learner_started(task_id, info)
        self._after_learner_update()

    def update_learner_info(self, task_id: str, info: LearnInfo) -> None:
        super().update_learner_info(task_id, info)
        self._after_learner_update()

    def _after_learner_update(self) -> None:
        with self._lock:
            step, published = self._learner_step, self._policy_iter >= 0
            due = published and (not self._first_snapshot or step - self._checked_at >= self._snapshot_every)
            if due:
                force = not self._first_snapshot and not self.league.historical_players
                self._first_snapshot = True
                self._checked_at = step
        if due:
            self._judge_snapshot(step, force=force)

    # ---------------------------------------------------------------- tasks
    def get_collector_task(self, collector: str = "") -> CollectTask | EvalTask | None:
        task = super().get_collector_task(collector)
        if not isinstance(task, CollectTask):
            return task
        league = self.league
        if league.draw_fixed_opponent():  # the collector's fixed opponent plays seat 1 (no league player)
            return dataclasses.replace(task, job=BattleJob(players=[self._main_id, FIXED_OPPONENT],
                                                           policy_files=[self._policy_id], fixed_opponent=True))
        job = league.get_job_info(self._main_id)
        # the main player plays the published policy, a historical one its snapshot file beside it
        files = [self._policy_id if pid == self._main_id else os.path.basename(path)
                 for pid, path in zip(job.player_id, job.checkpoint_path)]
        return dataclasses.replace(task, job=BattleJob(players=list(job.player_id), policy_files=files))

    def finish_collector_task(self, task_id: str, finished_task: CollectResult | EvalResult) -> bool:
        reached = super().finish_collector_task(task_id, finished_task)
        battle = finished_task.battle
        if not isinstance(finished_task, CollectResult) or battle is None or not battle.games:
            return reached
        if battle.players[1] == FIXED_OPPONENT:  # not a league game: no payoff, no Elo
            with self._lock:
                self._fixed_games += len(battle.games)
            return reached
        from ding.league import JobResult, Outcome

        home, away = battle.players
        try:  # the record was checked against its task: the players are this league's
            self.league.finish_job(JobResult(home, away, tuple(Outcome(o) for o in battle.home_outcomes())))
            with self._lock:
                self._league_games += len(battle.games)
        except LeagueError as e:  # (a snapshot that a resumed league does not know): that task's games only
            _logger.warning(f"league: the games of task {task_id} were not counted: {e}")
        return reached

    def _finish_eval(self, finished: EvalResult) -> bool:
        reached = super()._finish_eval(finished)
        if finished.battle is not None and finished.battle.games:
            win_rate, _, _ = finished.battle.rates()
            with self._lock:
                last = self.eval_history[-1]
                self.eval_history[-1] = dataclasses.replace(last, win_rate=win_rate)
        return reached

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """The solo commander's state and the league's (players, snapshots, payoff, ratings, generator)."""
        state = CommanderState.from_json(super().state_dict(), peer="the commander")
        with self._lock:
            games, fixed = self._league_games, self._fixed_games
        return dataclasses.replace(state, league=self.league.state_dict(), league_games=games,
                                   fixed_opponent_games=fixed).to_json()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        saved = CommanderState.from_json(state, peer="the saved coordinator state")
        if saved.league is not None:
            self.league.load_state_dict(saved.league)
        with self._lock:
            self._first_snapshot = bool(self.league.historical_players)
            self._league_games = saved.league_games
            self._fixed_games = saved.fixed_opponent_games
            self._checked_at = self.league.get_player_by_id(self._main_id).total_agent_step  # judged up to here
