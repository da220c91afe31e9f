"""Replay-buffer throughput at capacity 100,000 with CartPole-sized transitions.

    python tests/benchmark/bench_buffer.py             # medians of 5 runs (about a minute)
    python tests/benchmark/bench_buffer.py --smoke     # tiny sizes, used by the test suite

Each transition is a dict: obs and next_obs float32 (4,), action int64 (1,), reward float32 (1,), done bool.
Figures, for every implementation, measured in the same process with runs interleaved so machine noise hits all alike:

* push      items/s, pushed in chunks of 64 into a full buffer (the steady state: every push overwrites)
* sample    sample(64) calls/s
* cycle     sample(64) + priority update of those 64 items, calls/s (what a prioritized DQN learner does per step)

Implementations: ``NaiveReplayBuffer`` and ``AdvancedReplayBuffer`` (alpha 0.6, beta annealed), and two references:
``collections.deque(maxlen=N)`` + ``random.sample`` (uniform, no update), and an O(N) numpy prioritized buffer that
recomputes ``p**alpha / sum`` and calls ``np.random.choice(p=...)`` on every sample (plus IS weights).
DI-engine 0.5.3's ``AdvancedReplayBuffer`` measured about 600 cycles/s on this kind of machine; the target is 6,000.
"""
from __future__ import annotations

import argparse
import collections
import json
import operator
import random
import statistics
import time
from typing import Any, Callable

import numpy as np

BATCH = 64
_UNIQUE_ID, _BUFFER_IDX = operator.itemgetter("replay_unique_id"), operator.itemgetter("replay_buffer_idx")
DI_ENGINE_CYCLES_PER_S = 600.0  # docs: DI-engine 0.5.3 AdvancedReplayBuffer sample+update on this kind of machine
TARGET_CYCLES_PER_S = 6000.0


def make_transitions(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((n + 1, 4)).astype(np.float32)
    actions = rng.integers(0, 2, (n, 1))
    return [{"obs": obs[i].copy(), "next_obs": obs[i + 1].copy(), "action": actions[i].copy(),
             "reward": np.ones(1, dtype=np.float32), "done": bool(i % 200 == 199)} for i in range(n)]


class DequeBaseline:
    """A plain ``deque(maxlen=N)`` with ``random.sample``: uniform, no priorities."""

    name = "deque + random.sample"

    def __init__(self, capacity: int) -> None:
        self.data: collections.deque = collections.deque(maxlen=capacity)

    def push(self, chunk: list[dict]) -> None:
        self.data.extend(chunk)

    def sample(self) -> list[dict]:
        return random.sample(self.data, BATCH)

    def cycle(self, priorities: np.ndarray) -> None:
        self.sample()


class NumpyPrioritizedBaseline:
    """Proportional prioritized replay in the simplest vectorised way: O(N) work per sample."""

    name = "numpy O(N) prioritized"

    def __init__(self, capacity: int, alpha: float = 0.6, beta: float = 0.4) -> None:
        self.capacity, self.alpha, self.beta = capacity, alpha, beta
        self.data: list[Any] = [None] * capacity
        self.priority = np.zeros(capacity)
        self.tail = self.count = 0
        self.max_priority = 1.0

    def push(self, chunk: list[dict]) -> None:
        slots = (self.tail + np.arange(len(chunk))) % self.capacity
        for slot, item in zip(slots.tolist(), chunk):
            self.data[slot] = item
        self.priority[slots] = self.max_priority
        self.tail = (self.tail + len(chunk)) % self.capacity
        self.count = min(self.capacity, self.count + len(chunk))

    def sample(self) -> tuple[list[dict], np.ndarray, np.ndarray]:
        p = self.priority[:self.count] ** self.alpha
        p /= p.sum()
        idx = np.random.choice(self.count, BATCH, p=p)
        weight = (self.count * p[idx]) ** -self.beta / (self.count * p.min()) ** -self.beta
        return [self.data[i] for i in idx.tolist()], idx, weight

    def cycle(self, priorities: np.ndarray) -> None:
        _, idx, _ = self.sample()
        self.priority[idx] = priorities
        self.max_priority = max(self.max_priority, float(priorities.max()))


class DingBuffer:
    """Adapter giving a ding buffer the same three operations."""

    def __init__(self, kind: str, capacity: int) -> None:
        from ding.worker.replay_buffer import AdvancedReplayBuffer, NaiveReplayBuffer

        cls = AdvancedReplayBuffer if kind == "advanced" else NaiveReplayBuffer
        self.name = f"ding {kind}"
        self.buffer = cls(dict(replay_buffer_size=capacity, seed=0))
        self.iteration = 0

    def push(self, chunk: list[dict]) -> None:
        self.buffer.push(chunk, cur_collector_envstep=0)

    def sample(self) -> list[dict]:
        self.iteration += 1
        return self.buffer.sample(BATCH, self.iteration)

    def cycle(self, priorities: np.ndarray) -> None:
        batch = self.sample()
        if "replay_unique_id" in batch[0]:  # what the learner hands back as priority_info
            self.buffer.update({"priority": priorities,
                                "replay_unique_id": list(map(_UNIQUE_ID, batch)),
                                "replay_buffer_idx": list(map(_BUFFER_IDX, batch))})
        else:
            self.buffer.update({})


def _rate(op: Callable[[int], Any], min_ops: int, budget_s: float) -> float:
    """Calls per second of ``op(k)`` over at least ``min_ops`` calls and about ``budget_s`` seconds."""
    done = 0
    start = time.perf_counter()
    while True:
        op(done)
        done += 1
        elapsed = time.perf_counter() - start
        if done >= min_ops and elapsed >= budget_s:
            return done / elapsed


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one run (used by the test suite)")
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.6, help="seconds per measurement")
    args = parser.parse_args(argv)
    capacity, repeats, budget, min_ops = args.capacity, args.repeats, args.budget, 50
    if args.smoke:
        capacity, repeats, budget, min_ops = 2_000, 1, 0.0, 20

    random.seed(0)
    np.random.seed(0)
    transitions = make_transitions(capacity)
    chunks = [transitions[i:i + BATCH] for i in range(0, capacity - BATCH + 1, BATCH)]
    new_priorities = np.abs(np.random.default_rng(1).standard_normal((1024, BATCH))) + 1e-3
    impls = [DequeBaseline(capacity), NumpyPrioritizedBaseline(capacity), DingBuffer("naive", capacity),
             DingBuffer("advanced", capacity)]
    for impl in impls:  # fill to capacity first: every measurement runs on a full buffer
        for chunk in chunks:
            impl.push(chunk)
        impl.push(transitions[len(chunks) * BATCH:])

    runs: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for _ in range(repeats):
        for impl in impls:
            n_chunks = len(chunks)
            push, sample, cycle = impl.push, impl.sample, impl.cycle  # bound now: the lambdas run in this iteration
            runs[impl.name, "push"].append(
                BATCH * _rate(lambda k, push=push, n=n_chunks: push(chunks[k % n]), min_ops, budget))
            runs[impl.name, "sample"].append(_rate(lambda k, sample=sample: sample(), min_ops, budget))
            runs[impl.name, "cycle"].append(
                _rate(lambda k, cycle=cycle: cycle(new_priorities[k % 1024]), min_ops, budget))

    units = {"push": "items/s", "sample": "calls/s", "cycle": "calls/s"}
    results = [{"bench": "buffer", "impl": name, "op": op, "per_s": round(statistics.median(values), 1),
                "unit": units[op], "capacity": capacity, "batch": BATCH, "repeats": repeats,
                "runs": [round(v, 1) for v in values]} for (name, op), values in runs.items()]
    median = {(r["impl"], r["op"]): r["per_s"] for r in results}
    ours, numpy_per, deque_ = "ding advanced", NumpyPrioritizedBaseline.name, DequeBaseline.name
    ratios = {"bench": "buffer_ratios", "capacity": capacity, "repeats": repeats}
    for op in ("push", "sample", "cycle"):
        ratios[f"advanced_vs_numpy_per_{op}"] = round(median[ours, op] / median[numpy_per, op], 2)
        ratios[f"advanced_vs_deque_{op}"] = round(median[ours, op] / median[deque_, op], 2)
        ratios[f"naive_vs_deque_{op}"] = round(median["ding naive", op] / median[deque_, op], 2)
    ratios["advanced_cycle_vs_di_engine_600"] = round(median[ours, "cycle"] / DI_ENGINE_CYCLES_PER_S, 1)
    ratios["advanced_cycle_target_6000_met"] = median[ours, "cycle"] >= TARGET_CYCLES_PER_S
    results.append(ratios)

    print(f"capacity {capacity:,}, batch {BATCH}, medians of {repeats} run(s)")
    print(f"{'implementation':<26} {'push items/s':>14} {'sample(64)/s':>14} {'sample+update/s':>16}")
    for impl in impls:
        print(f"{impl.name:<26} {median[impl.name, 'push']:>14,.0f} {median[impl.name, 'sample']:>14,.0f} "
              f"{median[impl.name, 'cycle']:>16,.0f}")
    print(f"{'advanced / numpy O(N)':<26} {ratios['advanced_vs_numpy_per_push']:>13}x "
          f"{ratios['advanced_vs_numpy_per_sample']:>13}x {ratios['advanced_vs_numpy_per_cycle']:>15}x")
    met = ratios["advanced_cycle_target_6000_met"]
    print(f"advanced sample+update: {median[ours, 'cycle']:,.0f}/s = {ratios['advanced_cycle_vs_di_engine_600']}x "
          f"DI-engine 0.5.3 (~600/s); target {TARGET_CYCLES_PER_S:,.0f}/s met: {met}")
    for r in results:
        print(json.dumps(r))
    return results


if __name__ == "__main__":
    main()
