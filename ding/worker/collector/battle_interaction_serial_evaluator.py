"""BattleInteractionSerialEvaluator: play a policy against fixed opponents; win/draw/loss and return per player."""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ding.config.ranges import at_least
from ding.utils import SERIAL_EVALUATOR_REGISTRY, ConfigError, EnvError
from ding.utils.worker_logs import CONSOLE
from ding.worker.learner.checkpoint import CKPT_BEST_NAME

from .base_serial_evaluator import BaseSerialEvaluator, VectorEvalMonitor, fmt_return
from .battle_core import PolicyGroup, is_abnormal, player_returns
from .step_core import EnvStepCore

# info['result'] words (DI-engine's plural ones and the singular ones) -> win / draw / loss
_RESULT_WORDS = {"wins": "win", "win": "win", "draws": "draw", "draw": "draw", "losses": "loss", "loss": "loss"}


@dataclass(frozen=True)
class PlayerEvalStats:
    """One player's results over an evaluation (``wins + draws + losses`` counts the episodes whose info had a
    ``'result'``)."""

    returns: list[float]
    wins: int
    draws: int
    losses: int

    @property
    def return_mean(self) -> float:
        return float(np.mean(self.returns)) if self.returns else float("nan")

    @property
    def win_rate(self) -> float:
        decided = self.wins + self.draws + self.losses
        return self.wins / decided if decided else float("nan")


class BattleEvalInfo(list):
    """What ``eval`` returns beside the stop flag: as in DI-engine, a list with one entry per player, each the info
    dicts of that player's evaluated episodes (``info[0][k]['result']``); plus ``players`` (a
    :class:`PlayerEvalStats` per player), ``train_iter``, ``envstep``, ``stop_flag``, and ``duration`` / ``env_time`` /
    ``policy_time`` (seconds the evaluation took; the envs' steps and the policies' forward passes of them)."""

    def __init__(self, per_player: list[list[Any]], players: list[PlayerEvalStats], train_iter: int, envstep: int,
                 stop_flag: bool, duration: float = 0.0, env_time: float = 0.0, policy_time: float = 0.0) -> None:
        super().__init__(per_player)
        self.players = players
        self.train_iter = train_iter
        self.envstep = envstep
        self.stop_flag = stop_flag
        self.duration = duration
        self.env_time = env_time
        self.policy_time = policy_time


@SERIAL_EVALUATOR_REGISTRY.register("battle_interaction")
class BattleInteractionSerialEvaluator(BaseSerialEvaluator):
    """Evaluate ``policy[0]`` playing player 0 against ``policy[1:]`` (fixed opponents, scripted or trained) for exactly
    ``n_episode`` episodes split over the envs by fixed quotas (``VectorEvalMonitor``).

    The stop flag and the best result (``save_ckpt_fn('ckpt_best.pth.tar')``) use player 0's mean return against
    ``stop_value``; win/draw/loss come from each player's ``info['result']`` (``'wins'``, ``'draws'``, ``'losses'``).
    Each evaluation prints one line to the console. The policies get numpy observations (``obs[i]`` of each env).
    """

    config = dict(
        # Evaluate every N train iterations (and at the first should_eval call).
        eval_freq=50,
        # Episodes per evaluation, split over the envs by fixed quotas (compile_config copies env.n_evaluator_episode).
        n_episode=5,
        # Player 0's mean return that ends training (compile_config copies env.stop_value).
        stop_value=float("inf"),
    )
    config_ranges = {"eval_freq": at_least(1, integer=True), "n_episode": at_least(1, integer=True)}

    def reset_env(self, _env: Any = None) -> None:
        if _env is not None:
            self._env = _env
            if getattr(_env, "closed", True):
                _env.launch()
        elif self._env is not None:
            self._env.reset()

    def reset_policy(self, _policy: Any = None) -> None:
        if _policy is not None and not isinstance(_policy, PolicyGroup):
            _policy = PolicyGroup(_policy, f"{type(self).__name__}.reset_policy")
        super().reset_policy(_policy)

    def eval(
            self,
            save_ckpt_fn: Callable[[str], Any] | None = None,
            train_iter: int = -1,
            envstep: int = -1,
            n_episode: int | None = None,
    ) -> tuple[bool, BattleEvalInfo]:
        """Run one evaluation; return ``(stop_flag, info)`` (see :class:`BattleEvalInfo`)."""
        self._check_ready("eval")
        n_episode = self._cfg.n_episode if n_episode is None else n_episode
        if n_episode is None or n_episode < 1:
            raise ConfigError(f"BattleInteractionSerialEvaluator.eval: n_episode must be >= 1, got {n_episode!r} "
                              "(set env.n_evaluator_episode or pass eval(n_episode=...))")
        stop_value = self._cfg.stop_value
        if not isinstance(stop_value, (int, float)):
            raise ConfigError(f"BattleInteractionSerialEvaluator: stop_value must be one number (player 0's mean "
                              f"return), got {stop_value!r}; with one stop value per evaluator (DI-engine's "
                              "env.stop_value list), set each evaluator's cfg.stop_value before building it")
        env, group = self._env, self._policy
        players = len(group)
        env.reset()
        group.reset()
        monitor = VectorEvalMonitor(env.env_num, n_episode)
        finished = {i for i in range(env.env_num) if monitor.env_finished(i)}
        infos: list[list[Any]] = [[] for _ in range(players)]
        returns: list[list[float]] = [[] for _ in range(players)]
        core = EnvStepCore(env)
        steps = 0

        t0 = time.perf_counter()
        while not monitor.is_finished():
            timesteps = core.step(group.forward, {}, finished)
            if timesteps is None:
                raise EnvError(f"{self._instance_name}: no env is ready although only "
                               f"{monitor.get_current_episode()} of {n_episode} episodes are finished; the "
                               "evaluator's env manager must run enough episodes (env.manager.episode_num)")
            for env_id, t in timesteps.items():
                steps += 1
                if is_abnormal(t.info):  # the manager restarted the env; this episode does not count
                    group.reset([env_id])
                    continue
                if not t.done:
                    continue
                group.reset([env_id])
                if monitor.env_finished(env_id):
                    continue
                rets = player_returns(t.info, players)
                if math.isnan(rets[0]):
                    raise EnvError(f"env {env_id}: the last timestep of an episode has no info[0]"
                                   "['eval_episode_return']; a battle env must report each player's return there")
                monitor.update_reward(env_id, rets[0])
                for i in range(players):
                    infos[i].append(t.info[i])
                    returns[i].append(rets[i])
                if monitor.env_finished(env_id):
                    finished.add(env_id)
        duration = time.perf_counter() - t0

        stats = [_player_stats(returns[i], infos[i]) for i in range(players)]
        mean = stats[0].return_mean
        if mean > self._best_return:
            if save_ckpt_fn is not None:
                save_ckpt_fn(CKPT_BEST_NAME)
            self._best_return = mean
        stop_flag = bool(mean >= stop_value)
        result = BattleEvalInfo(infos, stats, train_iter, envstep, stop_flag, duration, core.env_time,
                                core.policy_time)
        self._log(result, steps / max(duration, 1e-9))
        return stop_flag, result

    def _log(self, result: BattleEvalInfo, rate: float) -> None:
        parts = []
        if result.train_iter >= 0:
            parts.append(f"iter {result.train_iter:,}")
        if result.envstep >= 0:
            parts.append(f"env steps {result.envstep:,}")
        main = result.players[0]
        parts.append("return " + " / ".join(fmt_return(p.return_mean) for p in result.players)
                     + f" (best {fmt_return(self._best_return)})")
        if main.wins + main.draws + main.losses:
            parts.append(f"W/D/L {main.wins}/{main.draws}/{main.losses}")
        parts.append(f"{rate:,.0f} steps/s")
        if result.stop_flag:
            parts.append(f"reached stop value {fmt_return(self._cfg.stop_value)}")
        self._logger.info(f"[{self._instance_name}] " + " | ".join(parts), extra=CONSOLE)
        tb = self._tb_logger
        if tb is None:
            return
        scalars: dict[str, float] = {}
        for i, p in enumerate(result.players):
            scalars[f"player{i}_return_mean"] = p.return_mean
            if p.wins + p.draws + p.losses:
                scalars[f"player{i}_win_rate"] = p.win_rate
        scalars["episode_return_mean"] = main.return_mean
        for k, v in scalars.items():
            if result.train_iter >= 0:
                tb.add_scalar(f"{self._instance_name}_iter/{k}", v, result.train_iter)
            if result.envstep >= 0:
                tb.add_scalar(f"{self._instance_name}_step/{k}", v, result.envstep)


def _player_stats(returns: list[float], infos: list[Any]) -> PlayerEvalStats:
    counts = {"win": 0, "draw": 0, "loss": 0}
    for info in infos:
        word = info.get("result") if isinstance(info, Mapping) else None
        if isinstance(word, str) and word in _RESULT_WORDS:
            counts[_RESULT_WORDS[word]] += 1
    return PlayerEvalStats(list(returns), counts["win"], counts["draw"], counts["loss"])
