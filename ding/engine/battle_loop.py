"""The serial self-play loop over a :class:`~ding.engine.battle_run.BattleRun`: one round at a time.

A round: evaluate the main player when due (against every fixed opponent the env offers) → stop checks → one job per
active player: the league picks the opponent (``get_job_info``: self-play, PFSP over snapshots, ...), the collector
plays ``n_episode`` games of the player against a frozen copy of it, the league counts the results (payoff, Elo), the
player's learner trains on its own side of the games ``update_per_collect`` times, the player's file is written and
the league judges a snapshot (and maybe a reset) → a checkpoint when one is due.

With the league's ``fixed_opponent_prob`` > 0 a job plays the env's first fixed opponent (e.g. Connect Four's scripted
player) instead of the league's choice with that probability, drawn from the loop's own generator; those games are
not in the payoff table (the fixed opponent is no league player).

Checkpoints are written between rounds only, so the loop's position is just its round count and generator.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ding.utils import CheckpointError

from .battle_run import ActOnly, BattlePlayer, BattleRun
from .resume import Limits
from .training_view import GracefulStop, ProgressView


@dataclass
class BattleRoundOutcome:
    """What one round did: how the run ended in it (None: it goes on), whether it evaluated, its time."""

    ended: str | None = None  # 'stop_value', 'limit', 'interrupted' or None
    stop_flag: bool = False
    evaluated: bool = False
    time_s: float = 0.0


class BattleLoop:
    """Rounds of league jobs for every active player (see the module doc)."""

    kind = "battle"

    def __init__(self, run: BattleRun) -> None:
        self.run = run
        cfg = run.cfg
        self.limits = Limits()
        self.stop_at_stop_value = True
        self.view: ProgressView | None = None
        self.rounds = 0
        self.scripted_prob = float(run.league.cfg.get("fixed_opponent_prob", 0.0))
        self.n_episode = cfg.policy.collect.get("n_episode")
        self.update_per_collect = int(cfg.policy.learn.get("update_per_collect", 1))
        self._rng = np.random.default_rng(int(cfg.seed) + 7919)
        self._last_ckpt_iter = 0

    def start(self, limits: Limits, stop_at_stop_value: bool = True) -> None:
        run = self.run
        self.limits, self.stop_at_stop_value = limits, stop_at_stop_value
        self.view = ProgressView(max_env_step=limits.env_step, max_train_iter=limits.train_iter, stop_value=None)
        if run.resumed:  # rows the stopped session wrote after its checkpoint go; the resumed run writes them again
            last = run.main.learner.train_iter
            run.eval_csv.truncate_after(last)
            run.battle_csv.truncate_after(last)
            self._last_ckpt_iter = last

    def round(self, stop: GracefulStop) -> BattleRoundOutcome:
        run = self.run
        learner, collector = run.main.learner, run.collector
        assert self.view is not None, "start() first"
        out = BattleRoundOutcome()
        t0 = time.perf_counter()
        due = [evaluator.should_eval(learner.train_iter) for evaluator in run.evaluators.values()]
        if any(due):
            out.evaluated = True
            out.stop_flag = run.evaluate() and self.stop_at_stop_value
            self.view.eval(run.last_eval["eval_return_mean"])
            if out.stop_flag:
                out.ended = "stop_value"
                return out
        if collector.envstep >= self.limits.env_step or learner.train_iter >= self.limits.train_iter:
            out.ended = "limit"
            return out
        for player in run.players.values():
            self._job(player)
        self.rounds += 1
        self.view.update(collector.envstep, learner.train_iter)
        every = run.save_ckpt_every
        if every > 0 and learner.train_iter // every > self._last_ckpt_iter // every:
            assert run.state is not None
            run.state.save_now()
            self._last_ckpt_iter = learner.train_iter
        if stop.requested:
            out.ended = "interrupted"
        out.time_s = time.perf_counter() - t0
        return out

    def _job(self, player: BattlePlayer) -> None:
        run = self.run
        league, collector = run.league, run.collector
        scripted = self.scripted_prob > 0 and float(self._rng.random()) < self.scripted_prob
        if scripted:
            opponent: Any = next(iter(run.train_opponents.values()))
            opponent_id = None
        else:
            job = league.get_job_info(player.player_id)
            opponent_id = job.player_id[1]
            if opponent_id in run.players:  # an active player: its current weights, frozen for this job
                run.opponent.collect_mode.load_state_dict(run.players[opponent_id].policy.collect_mode.state_dict())
            else:
                from ding.league.player_files import load_player_model

                run.opponent.collect_mode.load_state_dict(load_player_model(job.checkpoint_path[1], opponent_id))
            opponent = ActOnly(run.opponent.collect_mode)
        run.collector_env.reset()  # every job starts fresh games between its two players
        collector.reset_policy([player.policy.collect_mode, opponent])
        data, info = collector.collect(n_episode=self.n_episode, train_iter=player.learner.train_iter)
        if opponent_id is not None:
            league.finish_job({"player_id": [player.player_id, opponent_id],
                               "result": [i["result"] for i in info[0]]})
        for _ in range(self.update_per_collect):
            player.learner.train(data[0], collector.envstep)
        league.update_active_player({"player_id": player.player_id, "train_iteration": player.learner.train_iter})
        run.save_player_file(player)
        league.judge_snapshot(player.player_id)

    def state_dict(self) -> dict[str, Any]:
        opponents = {name: o.state_dict() for name, o in self.run.train_opponents.items()
                     if callable(getattr(o, "state_dict", None))}
        return {"kind": self.kind, "rounds": self.rounds, "rng": self._rng.bit_generator.state,
                "fixed_opponents": opponents}

    def load_state_dict(self, state: dict[str, Any], path: str) -> None:
        if state.get("kind") != self.kind:
            raise CheckpointError(f"resume: checkpoint '{path}' was written by the {state.get('kind')} loop, not by "
                                  "serial_pipeline_battle; resume it with the pipeline that wrote it")
        self.rounds = int(state["rounds"])
        self._rng.bit_generator.state = state["rng"]
        for name, opponent_state in state["fixed_opponents"].items():
            self.run.train_opponents[name].load_state_dict(opponent_state)
