"""MarineParallelCollector: one policy or two policies, many envs — battles of a two-player game, driven by tasks.

A collect task of the ``one_vs_one`` commander carries a :class:`~ding.parallel.protocol.BattleJob`: the
league players of the two seats and the policy files that play them (plain names under ``path_policy``). Seat 0 is
the learner's player (the published policy, reloaded as the zergling collector does). When both seats name the same
file the learner's policy plays itself (one policy, both sides' samples kept); otherwise a second policy, loaded from
the opponent's file (a historical snapshot), plays seat 1 greedily and only acts; in a fixed-opponent job (the league's
``fixed_opponent_prob``) a training copy of ``eval_opponent`` plays seat 1. Every task starts fresh games (the
envs are reset, so no game spans two opponents) and plays whole games until ``n_sample`` samples exist; its answer
holds the samples' metadata and a :class:`~ding.parallel.protocol.BattleResult` with every game's result per
seat. The games reach the league only through that answer: a task whose collector dies reports nothing.

An evaluation plays the learner's policy against the fixed opponent ``eval_opponent`` (``'module:Class'``, e.g.
Connect Four's scripted player) with the battle evaluator; its answer carries the games too (win rate).
"""
from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding.parallel.files import policy_path
from ding.parallel.protocol import (
    BATTLE_OUTCOMES,
    BattleJob,
    BattleResult,
    CollectResult,
    CollectTask,
    EvalResult,
    EvalTask,
)
from ding.parallel.roles.collector.zergling import ZerglingParallelCollector
from ding.utils import PARALLEL_COLLECTOR_REGISTRY, ConfigError

_RESULT_KEY = "result"  # a battle env's info key with each player's result at the end of a game (docs/league.md)
_SINGULAR = {"win": "wins", "draw": "draws", "loss": "losses"}  # words some envs use


class SeatPolicy:
    """A policy that only acts in a seat: ``forward`` without the collect settings (e.g. epsilon) meant for the
    learner's policy, no transitions kept (``collect_data`` False)."""

    collect_data = False

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def forward(self, data: Mapping[int, Any], **kwargs: Any) -> Any:
        return self.policy.forward(data)

    def reset(self, data_id: list[int] | None = None) -> None:
        if data_id is None:
            self.policy.reset()
        else:
            self.policy.reset(data_id)


def load_object(spec: str, where: str) -> Any:
    """The object ``'package.module:Name'`` names (a clear error naming ``where`` otherwise)."""
    module_name, _, name = str(spec).partition(":")
    if not module_name or not name:
        raise ConfigError(f"{where}: expected 'package.module:Name', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"{where}: cannot import {module_name!r} ({e})") from None
    try:
        return getattr(module, name)
    except AttributeError:
        raise ConfigError(f"{where}: module {module_name!r} has no {name!r}") from None


def game_result(info: Any, where: str) -> str:
    """A player's result word of a finished game from its last info."""
    word = info.get(_RESULT_KEY) if isinstance(info, Mapping) else None
    word = _SINGULAR.get(str(word), word)
    if word not in BATTLE_OUTCOMES:
        raise ValueError(f"{where}: a battle env must put each player's result ('wins', 'draws', 'losses') in its "
                         f"last info['{_RESULT_KEY}'], got {word!r:.40}")
    return str(word)


@PARALLEL_COLLECTOR_REGISTRY.register("marine")
class MarineParallelCollector(ZerglingParallelCollector):
    """See the module docstring. ``cfg`` is the compiled main config (``policy.collect.collector`` is this
    collector's own config); the env is a two-player battle env."""

    config = dict(
        ZerglingParallelCollector.config,
        type="marine",
        # the serial battle collector that plays the games (whole episodes, one train-sample list per seat)
        serial_collector=dict(type="episode_1v1", get_train_sample=True),
        # the fixed opponent of evaluations, 'package.module:Class' (called with eval_opponent_kwargs); its
        # forward(data) / reset(data_id) play seat 1
        eval_opponent=None,
        eval_opponent_kwargs=dict(),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._opponent: Any = None  # the second policy (seat 1 against a snapshot)
        self._train_opponent: Any = None  # the fixed opponent of fixed-opponent jobs (seat 1)
        self._opponent_file: tuple[str, int, int] | None = None  # (file, mtime_ns, size) loaded into it

    def start(self) -> None:
        from ding.worker.builder import build_acting, build_policy

        spec = self._own_cfg.get("eval_opponent")
        if not spec:
            raise ConfigError("policy.collect.collector.eval_opponent: the marine collector evaluates against a "
                              "fixed opponent; name its class as 'package.module:Class' (e.g. "
                              "'dizoo.board_games.connect_four.envs:ScriptedPlayer')")
        opponent_cls = load_object(spec, "policy.collect.collector.eval_opponent")
        kwargs = dict(self._own_cfg.get("eval_opponent_kwargs") or {})
        eval_opponent = opponent_cls(**kwargs)
        # fixed-opponent jobs (the league's fixed_opponent_prob) play their own instance: evaluating never changes what
        # training sees
        self._train_opponent = SeatPolicy(opponent_cls(**kwargs))
        self._opponent = build_policy(self._cfg, ["eval"], seed=self._seed)
        evaluator_cfg = dict(self._cfg.policy.eval.evaluator)
        evaluator_cfg["type"] = "battle_interaction"
        acting = build_acting(self._cfg, seed=self._seed, dynamic_seed=True,
                              collector_cfg=dict(self._own_cfg.serial_collector), exp_name=self._exp_name,
                              instance_name=self._instance_name, opponents=[SeatPolicy(self._opponent.eval_mode)],
                              eval_opponents=[eval_opponent], evaluator_cfg=evaluator_cfg)
        self._closables += acting.closables
        self._policy, self._collector, self._evaluator = acting.policy, acting.collector, acting.evaluator

    # ---------------------------------------------------------------- policies
    def _seat_policies(self, job: BattleJob | None) -> list[Any]:
        """The two seats' policies of a task: the learner's policy in seat 0; seat 1 the same (self-play) or the
        opponent's snapshot, loaded from its file when it changed."""
        learner = self._policy.collect_mode
        if job is None or job.self_play:
            return [learner, learner]
        if job.fixed_opponent:
            return [learner, self._train_opponent]
        name = job.policy_files[1]
        path = policy_path(os.path.dirname(self._policy_path), name)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"the opponent's policy file '{path}' (player {job.players[1]}) does not "
                                    "exist") from None
        stamp = (name, st.st_mtime_ns, st.st_size)
        if stamp != self._opponent_file:
            state = self.get_policy_update_info(path)
            if state is None:
                raise FileNotFoundError(f"the opponent's policy file '{path}' could not be read")
            from ding.parallel.files import check_policy_fits

            check_policy_fits(state, self._opponent.eval_mode.state_dict()["model"], path)
            self._opponent.eval_mode.load_state_dict({"model": state["model"]})
            self._opponent_file = stamp
        return [learner, SeatPolicy(self._opponent.eval_mode)]

    # ---------------------------------------------------------------- tasks
    def _collect(self, task: CollectTask) -> CollectResult:
        self._update_policy(force=self._policy_iter < 0)
        t0 = time.perf_counter()
        job = task.job
        collector = self._collector
        collector.reset_env()  # fresh games: none spans two opponents, none is left half-played for the next task
        collector.reset_policy(self._seat_policies(job))
        envstep0 = collector.envstep
        train_iter = max(self._policy_iter, 0)
        samples: list[Any] = []
        games: list[list[str]] = []
        returns: list[float] = []
        while len(samples) < task.n_sample:
            data, info = collector.collect(n_episode=1, train_iter=train_iter,
                                           policy_kwargs=dict(task.collect_setting))
            for seat_data in data:
                samples.extend(seat_data)
            for last0, last1 in zip(info[0], info[1]):
                games.append([game_result(last0, "seat 0"), game_result(last1, "seat 1")])
                ret = last0.get("eval_episode_return") if isinstance(last0, Mapping) else None
                if ret is not None:
                    returns.append(float(np.asarray(ret, dtype=np.float64).reshape(-1).sum()))
        metadata = self._write_samples(task.task_id, samples)
        self._recorder.take()  # (the battle collector reports its games itself)
        steps = collector.envstep - envstep0
        totals = self._totals
        totals.envstep += steps
        totals.sample_count += len(metadata)
        totals.episode_count += len(games)
        totals.tasks += 1
        return CollectResult(metadata=metadata, envstep=steps, sample_count=len(metadata),
                             policy_iter=self._policy_iter, episode_returns=returns,
                             duration=time.perf_counter() - t0,
                             battle=None if job is None else BattleResult(players=list(job.players), games=games))

    def _evaluate(self, task: EvalTask) -> EvalResult:
        """The learner's policy (or an evaluation's snapshot, see the zergling collector) against the fixed opponent
        for ``task.n_episode`` games (0: the configured number)."""
        policy_iter = self._load_eval_policy(task)
        t0 = time.perf_counter()
        self._evaluator.best_return = -math.inf if task.best_return is None else task.best_return
        save = self._save_best if task.save_best else (lambda _name: None)  # a shard's mean is not the evaluation's
        _, info = self._evaluator.eval(save, train_iter=max(policy_iter, 0), envstep=task.envstep,
                                       n_episode=task.n_episode or None)
        self._totals.eval_tasks += 1
        games = [[game_result(a, "seat 0"), game_result(b, "seat 1")] for a, b in zip(info[0], info[1])]
        returns = [float(r) for r in info.players[0].returns]
        return EvalResult(policy_iter=policy_iter, eval_return_mean=float(np.mean(returns)),
                          eval_return_std=float(np.std(returns)), episode_returns=returns,
                          duration=time.perf_counter() - t0, env_time=info.env_time,
                          policy_time=info.policy_time,
                          battle=BattleResult(players=[task.policy_id, "eval_opponent"], games=games))
