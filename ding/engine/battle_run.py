"""One serial self-play run over a league: the players' policies and learners, the league, the battle workers.

:class:`BattleRun` builds what ``serial_pipeline_battle`` trains: one policy and one learner per active player of the
league (``policy.other.league``), a :class:`~ding.worker.BattleEpisodeSerialCollector` the players take turns on,
one frozen *opponent* policy into which each job's opponent is loaded (a historical snapshot's file, or an active
player's current weights), and one :class:`~ding.worker.BattleInteractionSerialEvaluator` per fixed opponent the env
class offers (``eval_opponents(env_cfg, seed)``: e.g. Connect Four's scripted player). The first main player is *the*
player of the run: its learner writes the run's checkpoints, the evaluators play it, its numbers are the run's.

Its checkpoint state (:class:`~ding.engine.resume.RunState`) holds, besides the main player's policy: the collector,
the league (payoff, ratings, snapshots and its RNG; :class:`ding.league.player_files.LeagueCheckpointPart`), the
other players' policies, optimizers and iteration counts, the evaluators with their opponents' RNGs, every global
RNG and the loop's position. Checkpoints are written between rounds only, so a resume continues exactly.
"""
from __future__ import annotations

import copy
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from easydict import EasyDict

from ding.envs import create_env_manager, get_vec_env_setting
from ding.league import create_league
from ding.league.player_files import LeagueCheckpointPart, save_player_model
from ding.policy import create_policy
from ding.utils import ConfigError, atomic_write_text, close_all, set_pkg_seed, shown_dir
from ding.utils.tracking import run_writer
from ding.worker import BaseLearner, iteration_ckpt_name
from ding.worker.collector.base_serial_collector import create_serial_collector
from ding.worker.collector.base_serial_evaluator import create_serial_evaluator

from .resume import ResumePoint, RunState
from .training_view import BattleEvalCSV, EvalCSV, GracefulStop, ending_words


@dataclass
class BattlePlayer:
    """An active player of the league with the policy and learner that train it."""

    player_id: str
    policy: Any
    learner: BaseLearner


class ActOnly:
    """A policy view that only acts: the battle collector keeps no transitions of it (the frozen opponent)."""

    collect_data = False

    def __init__(self, view: Any) -> None:
        self._view = view

    def forward(self, data: Any, **kwargs: Any) -> Any:
        return self._view.forward(data, **kwargs)

    def reset(self, data_id: list[int] | None = None) -> None:
        self._view.reset(data_id)


class BattleRun:
    """The components of one serial league run (see the module doc)."""

    def __init__(self, cfg: Any, model: torch.nn.Module | None, dynamic_seed: bool | None) -> None:
        self.cfg = cfg
        self._closables: list[Any] = []
        self.resumed = False
        self._start_time = time.time()
        self.state: RunState | None = None
        self.last_eval: dict[str, Any] = {}
        try:
            self._build(model, dynamic_seed)
        except BaseException:  # a failed (or interrupted) set-up closes what it already started, then re-raises
            self.close()
            raise

    def _own(self, obj: Any) -> Any:
        self._closables.append(obj)
        return obj

    def _build(self, model: torch.nn.Module | None, dynamic_seed: bool | None) -> None:
        cfg = self.cfg
        seed = int(cfg.seed)
        # no league section (DI-engine's selfplay demo config): plain self-play, one naive_sp_player
        league_cfg = cfg.policy.other.get("league") or EasyDict()
        env_fn, collector_env_cfg, evaluator_env_cfg = get_vec_env_setting(cfg.env)
        self.collector_env = self._own(
            create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg]))
        self.collector_env.seed(seed, dynamic_seed=dynamic_seed)
        self.tb_logger = self._own(run_writer(cfg, os.path.join(cfg.exp_name, "log", "serial")))  # + logger.types
        league_cfg = copy.deepcopy(league_cfg)
        league_cfg.path_policy = os.path.join(cfg.exp_name, "policy")  # the players' files belong to the run
        self.league = create_league(league_cfg, self._load_player, seed=seed)
        set_pkg_seed(seed, use_cuda=bool(cfg.policy.get("cuda", False)))
        # the main learner writes the run's checkpoints, between rounds only: its periodic hook becomes the loop's
        self.save_ckpt_every = int(cfg.policy.learn.learner.get("hook", {}).get("save_ckpt_after_iter", 0) or 0)
        main_learner_cfg = copy.deepcopy(cfg.policy.learn.learner)
        main_learner_cfg.hook.save_ckpt_after_iter = 0
        other_learner_cfg = copy.deepcopy(main_learner_cfg)
        other_learner_cfg.hook.save_ckpt_after_run = False
        ids = self.league.active_players_ids
        self.main_id = next((i for i in ids if i.startswith("main_player")), ids[0])
        self.players: dict[str, BattlePlayer] = {}
        for pid in ids:
            policy = create_policy(cfg.policy, model=copy.deepcopy(model), enable_field=["learn", "collect", "eval"])
            is_main = pid == self.main_id
            learner = self._own(BaseLearner(
                main_learner_cfg if is_main else other_learner_cfg, policy.learn_mode, self.tb_logger,
                exp_name=cfg.exp_name, instance_name="learner" if is_main else f"{pid}_learner",
                ckpt_dir=None if is_main else os.path.join(cfg.exp_name, "ckpt", pid)))
            self.players[pid] = BattlePlayer(pid, policy, learner)
        self.main = self.players[self.main_id]
        self.opponent = create_policy(cfg.policy, model=copy.deepcopy(model), enable_field=["collect"])
        self.collector = self._own(create_serial_collector(
            cfg.policy.collect.collector, env=self.collector_env,
            policy=[self.main.policy.collect_mode, ActOnly(self.opponent.collect_mode)], tb_logger=self.tb_logger,
            exp_name=cfg.exp_name))
        self._build_evaluators(env_fn, evaluator_env_cfg, seed)
        self.eval_csv = EvalCSV(os.path.join(cfg.exp_name, "log", "eval.csv"))
        self.battle_csv = BattleEvalCSV(os.path.join(cfg.exp_name, "log", "battle_eval.csv"))

    def _build_evaluators(self, env_fn: Any, evaluator_env_cfg: list, seed: int) -> None:
        cfg = self.cfg
        offer = getattr(env_fn, "eval_opponents", None)
        if not callable(offer):
            env_name = getattr(env_fn, "__name__", env_fn)
            raise ConfigError(f"serial_pipeline_battle: env '{cfg.env.get('type')}' ({env_name}) "
                              "offers no fixed opponents to evaluate against: give its class a classmethod "
                              "eval_opponents(env_cfg, seed) -> {name: opponent} (see docs/league.md)")
        self.eval_opponents: dict[str, Any] = dict(offer(cfg.env, seed))
        # jobs against a fixed opponent (the league's fixed_opponent_prob) get their own copy: evaluating never
        # changes what training sees
        self.train_opponents: dict[str, Any] = dict(offer(cfg.env, seed + 1))
        stop_values = cfg.env.get("stop_value", float("inf"))
        if not isinstance(stop_values, (list, tuple)):
            stop_values = [stop_values] * len(self.eval_opponents)
        if len(stop_values) != len(self.eval_opponents):
            raise ConfigError(f"env.stop_value: {len(stop_values)} values for {len(self.eval_opponents)} evaluators "
                              f"({', '.join(self.eval_opponents)}); give one number, or one per evaluator in that "
                              "order")
        self.evaluators: dict[str, Any] = {}
        for (name, opponent), stop_value in zip(self.eval_opponents.items(), stop_values):
            env = self._own(create_env_manager(cfg.env.manager,
                                               [partial(env_fn, cfg=c) for c in evaluator_env_cfg]))
            env.seed(seed, dynamic_seed=False)
            eval_cfg = copy.deepcopy(cfg.policy.eval.evaluator)
            eval_cfg.stop_value = float(stop_value)
            self.evaluators[name] = self._own(create_serial_evaluator(
                eval_cfg, env=env, policy=[self.main.policy.eval_mode, opponent], tb_logger=self.tb_logger,
                exp_name=cfg.exp_name, instance_name=name))

    # ---------------------------------------------------------------- the league's files and players
    def _load_player(self, player_id: str, path: str) -> None:
        """The league resets ``player_id`` (``mutate``): its model goes back to the file at ``path``."""
        from ding.league.player_files import load_player_model

        self.players[player_id].policy.collect_mode.load_state_dict(load_player_model(path, player_id))

    def save_player_file(self, player: BattlePlayer) -> None:
        path = self.league.get_player_by_id(player.player_id).checkpoint_path
        save_player_model(path, player.policy.collect_mode.state_dict())

    def first_snapshots(self) -> None:
        """A new run: the reset checkpoint (a fresh model) and a first historical copy of every active player."""
        save_player_model(self.league.reset_checkpoint_path, self.opponent.collect_mode.state_dict())
        for player in self.players.values():
            self.save_player_file(player)
            self.league.judge_snapshot(player.player_id, force=True)

    # ---------------------------------------------------------------- start, evaluation, end
    def begin(self, loop: Any, resume: ResumePoint | None) -> None:
        parts = {"collector": self.collector, "league": LeagueCheckpointPart(self.league),
                 "players": _OtherPlayers(self), "evaluators": _Evaluators(self), "tracking": self.tb_logger}
        self.state = state = RunState(self.main.learner, parts, loop, self.elapsed)
        self._start_time = time.time()
        self.main.learner.call_hook("before_run")
        if resume is not None:
            state.load(resume)
            self._start_time -= state.loaded_elapsed
            self.resumed = True
        else:
            self.first_snapshots()
        self.tb_logger.start(self.cfg)  # the trackers' runs: new, or the ones the checkpoint names

    def evaluate(self) -> bool:
        """Every evaluator plays the main player once; recorded. True when all of them reached their stop value."""
        learner, envstep = self.main.learner, self.collector.envstep
        rating = float(self.league.get_player_by_id(self.main_id).rating.elo)
        stops, first = [], None
        for i, (name, evaluator) in enumerate(self.evaluators.items()):
            # ckpt_best.pth.tar follows the first opponent's evaluator only (the others would overwrite it)
            save_best = learner.save_checkpoint if i == 0 else None
            stop_flag, info = evaluator.eval(save_best, learner.train_iter, envstep)
            stops.append(bool(stop_flag))
            p0 = info.players[0]
            self.battle_csv.append(learner.train_iter, envstep, name, p0, rating, self.elapsed())
            self.tb_logger.add_scalar(f"league_step/{name}_win_rate", p0.win_rate, envstep)
            if first is None:
                first = p0
        self.tb_logger.add_scalar("league_step/main_player_elo", rating, envstep)
        assert first is not None
        returns = np.asarray(first.returns, dtype=np.float64)
        self.last_eval = {"train_iter": learner.train_iter, "env_step": envstep,
                          "eval_return_mean": float(returns.mean()), "eval_return_std": float(returns.std()),
                          "win_rate": first.win_rate, "rating": rating}
        self.eval_csv.append(learner.train_iter, envstep, float(returns.mean()), float(returns.std()), self.elapsed())
        return all(stops)

    def finish(self, ended: str, stop_flag: bool, stop: GracefulStop) -> None:
        """``after_run`` hooks, a checkpoint when Ctrl-C stopped the run, the ``result`` file; re-raise an
        interrupt (as :meth:`ding.engine.serial_run.SerialRun.finish`)."""
        assert self.state is not None, "begin() first"
        learner = self.main.learner
        paused = ended == "interrupted"
        self.state.ended = None if paused else {"reason": ended, "eval_return_mean": None,
                                                "train_iter": self.last_eval.get("train_iter")}
        learner.call_hook("after_run")
        if learner.ckpt_name != iteration_ckpt_name(learner.train_iter):
            self.state.save_now()
        self.tb_logger.finish(self._write_result(stop_flag, ended, stop.requested), ended)
        stop.reraise(self.cfg.exp_name)

    def _write_result(self, stop_flag: bool, ended: str, interrupted: bool) -> dict[str, Any]:
        import json

        wall = self.elapsed()
        result = {
            "exp_name": self.cfg.exp_name, "stop_flag": bool(stop_flag), "interrupted": interrupted, "ended": ended,
            "stop_value": self.cfg.env.get("stop_value"), "env_step": int(self.collector.envstep),
            "train_iter": int(self.main.learner.train_iter), "eval_return": self.last_eval.get("eval_return_mean"),
            "eval_win_rate": self.last_eval.get("win_rate"), "rating": self.last_eval.get("rating"),
            "players": self.league.player_rank(), "wall_time_s": round(wall, 3), "seed": self.cfg.seed,
        }
        atomic_write_text(os.path.join(self.cfg.exp_name, "result"), json.dumps(result, indent=2) + "\n")
        why = ending_words(stop_flag, interrupted, ended)
        print(f"ding: {why} after {result['env_step']:,} env steps and {result['train_iter']:,} iterations of the "
              f"main player ({wall:.1f} s); results in {shown_dir(self.cfg.exp_name)}", flush=True)
        return result

    def elapsed(self) -> float:
        return time.time() - self._start_time

    def close(self) -> None:
        closables, self._closables = self._closables[::-1], []
        close_all(closables)


class _OtherPlayers:
    """The active players besides the main one, as one checkpoint part: policy (model, optimizer) and iterations."""

    def __init__(self, run: BattleRun) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        return {pid: {"policy": p.policy.learn_mode.state_dict(), "train_iter": p.learner.train_iter}
                for pid, p in self.run.players.items() if pid != self.run.main_id}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for pid, p in self.run.players.items():
            if pid == self.run.main_id:
                continue
            p.policy.learn_mode.load_state_dict(state[pid]["policy"])
            p.learner.last_iter.update(int(state[pid]["train_iter"]))


class _Evaluators:
    """The evaluators (best return, last evaluation) and their opponents' own random generators."""

    def __init__(self, run: BattleRun) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        out = {}
        for name, evaluator in self.run.evaluators.items():
            opponent = self.run.eval_opponents[name]
            get = getattr(opponent, "state_dict", None)
            out[name] = {"evaluator": evaluator.state_dict(), "opponent": get() if callable(get) else None}
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for name, evaluator in self.run.evaluators.items():
            evaluator.load_state_dict(state[name]["evaluator"])
            if state[name]["opponent"] is not None:
                self.run.eval_opponents[name].load_state_dict(state[name]["opponent"])
