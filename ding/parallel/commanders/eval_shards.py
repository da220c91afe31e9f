"""One evaluation split over several collectors: its shards, their results, and the combined answer.

An evaluation runs ``n_episode`` episodes of one policy. Run by one collector, its wall time is the sum of the
episodes (the last evaluation of a run, the one that reaches the stop value, is its longest). Split into shards of
about ``n_episode / shards`` episodes each, on as many free collectors, it takes the time of the longest shard. Every
shard must evaluate the *same* policy, so the evaluation is pinned to a snapshot of the policy file taken when it
starts (its own policy id, deleted when the evaluation ends). A shard whose task fails goes back to the queue and the
next free collector runs it; the evaluation ends when every episode has a result.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ding.parallel.protocol import BattleResult, EvalResult

# An evaluation is split only while the envs' steps took at least this share of the evaluations' stepping time so far
# (once the commander key ``eval_split_env_share``): each shard repeats the forward passes, only the envs' time is
# divided. Plain CartPole's envs take about a tenth (never split), a 2 ms-per-step env about nine tenths.
MIN_ENV_SHARE = 0.5


def split_episodes(n_episode: int, shards: int) -> list[int]:
    """``n_episode`` episodes in ``min(shards, n_episode)`` shards whose sizes differ by at most one (largest first)."""
    shards = max(1, min(int(shards), int(n_episode)))
    base, extra = divmod(int(n_episode), shards)
    return [base + (1 if i < extra else 0) for i in range(shards)]


class EnvShare:
    """Of the time evaluations spent stepping (the envs' steps plus the policy's forward passes), the envs' share,
    over every evaluation so far: one evaluation's clocks can be off by a preemption on a busy machine, the run's
    totals hardly. ``value`` is None until an evaluation reported its times (a collector that does not measure them
    reports none)."""

    def __init__(self) -> None:
        self.env = 0.0
        self.policy = 0.0

    def add(self, results: Iterable[EvalResult]) -> None:
        for r in results:
            self.env += r.env_time
            self.policy += r.policy_time

    @property
    def value(self) -> float | None:
        total = self.env + self.policy
        return self.env / total if total > 0 else None


class SplitGate:
    """How many collectors the next evaluation is split over, judged from the evaluations so far: splitting pays
    only where the envs' steps, which the shards divide, outweigh the forward passes, which every shard repeats.
    ``shards``: None splits over every connected collector, 1 never splits; ``min_env_share`` 0 splits whatever the
    envs cost (from the first evaluation on)."""

    def __init__(self, shards: int | None, min_env_share: float) -> None:
        self.shards = shards
        self.min_env_share = min_env_share
        self.env_share = EnvShare()

    def shards_for(self, collectors: int) -> int:
        if not self._env_bound():
            return 1
        return self.shards if self.shards is not None else max(1, collectors)

    def _env_bound(self) -> bool:
        if self.min_env_share <= 0:
            return True
        share = self.env_share.value  # unknown before the first evaluation: not split
        return share is not None and share >= self.min_env_share

    def record(self, results: Iterable[EvalResult]) -> None:
        self.env_share.add(results)


@dataclass
class ShardedEvaluation:
    """The state of one evaluation: shards to hand out, shards running (task id -> episodes), results so far."""

    policy_id: str  # the policy file every shard loads (a snapshot, or the live policy when none could be taken)
    snapshot: bool  # ``policy_id`` is a snapshot that must be deleted when the evaluation ends
    pending: list[int]  # episode counts of the shards not handed out yet
    sharded: bool = False  # more than one shard: collectors do not keep a best checkpoint of a part
    running: dict[str, int] = field(default_factory=dict)
    results: list[EvalResult] = field(default_factory=list)

    @classmethod
    def of(cls, policy_id: str, snapshot: bool, n_episode: int | None, shards: int) -> ShardedEvaluation:
        if n_episode is None or not snapshot or shards <= 1:
            return cls(policy_id=policy_id, snapshot=snapshot, pending=[0])  # 0: the collector's own n_episode
        sizes = split_episodes(n_episode, shards)
        return cls(policy_id=policy_id, snapshot=snapshot, pending=sizes, sharded=len(sizes) > 1)

    def hand_out(self, task_id: str) -> int:
        """The episodes of the next shard, now running as ``task_id`` (0: the collector's configured number)."""
        n = self.pending.pop(0)
        self.running[task_id] = n
        return n

    def failed(self, task_id: str) -> None:
        """That shard's task failed: it goes back to the queue."""
        n = self.running.pop(task_id, None)
        if n is not None:
            self.pending.insert(0, n)

    def finished(self, task_id: str, result: EvalResult) -> bool:
        """Record a shard's result; True once every shard is in."""
        if self.running.pop(task_id, None) is not None:
            self.results.append(result)
        return not self.pending and not self.running

    def combined(self) -> EvalResult:
        """One result over every shard's episodes (the policy iteration of the earliest shard's policy)."""
        if len(self.results) == 1:
            return self.results[0]
        returns = [r for res in self.results for r in res.episode_returns]
        lengths = [n for res in self.results for n in res.episode_lengths]
        if returns:
            mean = sum(returns) / len(returns)
            std = math.sqrt(sum((r - mean) ** 2 for r in returns) / len(returns))
        else:  # results without per-episode returns: weight the shards' means equally
            mean = sum(r.eval_return_mean for r in self.results) / len(self.results)
            std = max(r.eval_return_std for r in self.results)
        longest = max(self.results, key=lambda r: r.duration)  # the evaluation took as long as its longest shard
        battles = [r.battle for r in self.results if r.battle is not None]  # battle evaluations: every shard's games
        battle = None if not battles else BattleResult(players=list(battles[0].players),
                                                       games=[g for b in battles for g in b.games])
        return EvalResult(policy_iter=min(r.policy_iter for r in self.results), eval_return_mean=mean,
                          eval_return_std=std, episode_returns=returns, episode_lengths=lengths,
                          envstep_count=sum(r.envstep_count for r in self.results),
                          duration=longest.duration, env_time=longest.env_time,
                          policy_time=longest.policy_time, battle=battle)
