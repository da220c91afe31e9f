"""MarineParallelCollector: battles of a two-player game, driven by tasks.

Seat 0 plays the learner's published policy; seat 1, as the task's :class:`~ding.parallel.protocol.BattleJob` says,
the same policy (self-play: both seats' samples kept), an opponent's snapshot that only acts, or a training copy of
``eval_opponent`` (fixed-opponent jobs). Evaluations play ``eval_opponent`` with the battle evaluator."""
from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding.parallel.files import policy_path
from ding.parallel.protocol import BATTLE_OUTCOMES, BattleJob, BattleResult, CollectTask, EvalResult, EvalTask
from ding.parallel.roles.collector.zergling import ZerglingParallelCollector
from ding.utils import PARALLEL_COLLECTOR_REGISTRY, ConfigError

_RESULT_KEY = "result"  # a battle env's info key with each player's result at the end of a game (docs/league.md)
_SINGULAR = {"win": "wins", "draw": "draws", "loss": "losses"}  # words some envs use


class SeatPolicy:
    """A policy that only acts in a seat: ``forward`` without the learner's collect settings (e.g. epsilon), no
    transitions kept."""

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


def _games(info: Any) -> list[list[str]]:
    """Each finished game's results per seat, from the two seats' last infos."""
    return [[game_result(a, "seat 0"), game_result(b, "seat 1")] for a, b in zip(info[0], info[1])]


@PARALLEL_COLLECTOR_REGISTRY.register("marine")
class MarineParallelCollector(ZerglingParallelCollector):
    """The env is a two-player battle env; every task resets it (no game spans two opponents) and plays whole games."""

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
        from ding.worker.builder import build_policy

        spec = self._own_cfg.get("eval_opponent")
        if not spec:
            raise ConfigError("policy.collect.collector.eval_opponent: the marine collector evaluates against a "
                              "fixed opponent; name its class as 'package.module:Class' (e.g. "
                              "'dizoo.board_games.connect_four.envs:ScriptedPlayer')")
        opponent_cls = load_object(spec, "policy.collect.collector.eval_opponent")
        kwargs = dict(self._own_cfg.get("eval_opponent_kwargs") or {})
        eval_opponent = opponent_cls(**kwargs)
        # fixed-opponent jobs play their own instance: evaluating never changes what training sees
        self._train_opponent = SeatPolicy(opponent_cls(**kwargs))
        self._opponent = build_policy(self._cfg, ["eval"], seed=self._seed)
        evaluator_cfg = dict(self._cfg.policy.eval.evaluator, type="battle_interaction")
        self._build(opponents=[SeatPolicy(self._opponent.eval_mode)], eval_opponents=[eval_opponent],
                    evaluator_cfg=evaluator_cfg)

    def _seat_policies(self, job: BattleJob | None) -> list[Any]:
        """The two seats' policies of a task; an opponent's snapshot is loaded from its file when it changed."""
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
            if self._load_policy(path, self._opponent.eval_mode) is None:
                raise FileNotFoundError(f"the opponent's policy file '{path}' could not be read")
            self._opponent_file = stamp
        return [learner, SeatPolicy(self._opponent.eval_mode)]

    def _play(self, task: CollectTask) -> tuple[list[Any], int, dict[str, Any]]:
        job = task.job
        collector = self._collector
        collector.reset_env()  # fresh games: none spans two opponents, none is left half-played for the next task
        collector.reset_policy(self._seat_policies(job))
        samples: list[Any] = []
        games: list[list[str]] = []
        returns: list[float] = []
        while len(samples) < task.n_sample:
            data, info = collector.collect(n_episode=1, train_iter=max(self._policy_iter, 0),
                                           policy_kwargs=dict(task.collect_setting))
            for seat_data in data:
                samples.extend(seat_data)
            games += _games(info)  # (each seat's last info is a dict: game_result checked it)
            returns += [float(np.asarray(last0["eval_episode_return"], dtype=np.float64).reshape(-1).sum())
                        for last0 in info[0] if last0.get("eval_episode_return") is not None]
        battle = None if job is None else BattleResult(players=list(job.players), games=games)
        return samples, len(games), dict(episode_returns=returns, battle=battle)

    def _evaluate(self, task: EvalTask) -> EvalResult:
        policy_iter = self._load_eval_policy(task)
        t0 = time.perf_counter()
        info = self._run_evaluator(task, policy_iter)
        returns = [float(r) for r in info.players[0].returns]
        return EvalResult(policy_iter=policy_iter, eval_return_mean=float(np.mean(returns)),
                          eval_return_std=float(np.std(returns)), episode_returns=returns,
                          duration=time.perf_counter() - t0,
                          battle=BattleResult(players=[task.policy_id, "eval_opponent"], games=_games(info)))
