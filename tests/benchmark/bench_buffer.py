"""Replay-buffer throughput with CartPole-sized transitions, ding next to DI-engine 0.5.3 in the same run.

    python tests/benchmark/bench_buffer.py                                   # capacity 100k, medians of 5 runs
    python tests/benchmark/bench_buffer.py --di-engine-python /path/to/venv/bin/python   # + DI-engine 0.5.3
    python tests/benchmark/bench_buffer.py --capacity 1000000 --repeats 3   # the size Atari runs use
    python tests/benchmark/bench_buffer.py --smoke                           # tiny sizes, used by the test suite

Each transition is a dict: obs and next_obs float32 (4,), action int64 (1,), reward float32 (1,), done bool.
Figures, for every implementation, with runs interleaved so machine noise hits all alike:

* push      items/s, pushed in chunks of 64 into a full buffer (the steady state: every push overwrites; DI-engine is
            handed shallow copies, as it writes into the pushed dicts)
* sample    sample(64) calls/s
* cycle     sample(64) + priority update of those 64 items, calls/s (what a prioritized DQN learner does per step)

Implementations: ``NaiveReplayBuffer`` and ``AdvancedReplayBuffer`` (alpha 0.6, beta annealed), and two references:
``collections.deque(maxlen=N)`` + ``random.sample`` (uniform, no update), and an O(N) numpy prioritized buffer that
recomputes ``p**alpha / sum`` and calls ``np.random.choice(p=...)`` on every sample (plus IS weights).

DI-engine 0.5.3's ``AdvancedReplayBuffer`` is never a project dependency: install it in its own virtualenv (see
``docs/benchmarks.md``) and pass that interpreter with ``--di-engine-python`` (or ``DING_BENCH_DI_ENGINE_PYTHON``). It
then runs in a subprocess of that interpreter (this file, ``--worker di-engine``) on the identical workload (same
transitions, same config, same new priorities), filled once and measured between ding's repeats; the ratio of medians
is the figure to read. Without it the DI-engine column is skipped with a note.
"""
from __future__ import annotations

import argparse
import collections
import json
import operator
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import IO, Any, Callable

import numpy as np

BATCH = 64
OPS = ("push", "sample", "cycle")
TARGET_RATIO = 10.0  # issue #17: ding's sample+update cycles at >= 10x DI-engine's, measured in the same run
DI_ENGINE_NAME = "DI-engine 0.5.3 advanced"
_UNIQUE_ID, _BUFFER_IDX = operator.itemgetter("replay_unique_id"), operator.itemgetter("replay_buffer_idx")


def make_transitions(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((n + 1, 4)).astype(np.float32)
    actions = rng.integers(0, 2, (n, 1))
    return [{"obs": obs[i].copy(), "next_obs": obs[i + 1].copy(), "action": actions[i].copy(),
             "reward": np.ones(1, dtype=np.float32), "done": bool(i % 200 == 199)} for i in range(n)]


def new_priorities() -> np.ndarray:
    """1024 batches of fresh priorities, the same in every process."""
    return np.abs(np.random.default_rng(1).standard_normal((1024, BATCH))) + 1e-3


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


class AdvancedAdapter:
    """push / sample / cycle on an ``AdvancedReplayBuffer`` (ding's, or DI-engine's in the worker process)."""

    def __init__(self, name: str, buffer: Any) -> None:
        self.name, self.buffer = name, buffer
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


def ding_buffer(kind: str, capacity: int) -> AdvancedAdapter:
    from ding.worker.replay_buffer import AdvancedReplayBuffer, NaiveReplayBuffer

    cls = AdvancedReplayBuffer if kind == "advanced" else NaiveReplayBuffer
    return AdvancedAdapter(f"ding {kind}", cls(dict(replay_buffer_size=capacity, seed=0)))


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def _rate(op: Callable[[int], Any], min_ops: int, budget_s: float, clock: str = "wall") -> float:
    """Calls per second of ``op(k)`` over at least ``min_ops`` calls and about ``budget_s`` seconds of ``clock``."""
    now = CLOCKS[clock]
    done = 0
    start = now()
    while True:
        op(done)
        done += 1
        elapsed = now() - start
        if done >= min_ops and elapsed >= budget_s:
            return done / elapsed


class Workload:
    """The filled-to-capacity state and the three measurements, the same in this process and in the worker."""

    def __init__(self, capacity: int, min_ops: int, budget: float, clock: str = "wall") -> None:
        self.capacity, self.min_ops, self.budget, self.clock = capacity, min_ops, budget, clock
        self.transitions = make_transitions(capacity)
        self.chunks = [self.transitions[i:i + BATCH] for i in range(0, capacity - BATCH + 1, BATCH)]
        self.priorities = new_priorities()

    def fill(self, impl: Any) -> float:
        """Push every transition (the buffer ends full); returns the seconds it took."""
        start = time.perf_counter()
        for chunk in self.chunks:
            impl.push(chunk)
        impl.push(self.transitions[len(self.chunks) * BATCH:])
        return time.perf_counter() - start

    def measure(self, impl: Any, op: str) -> float:
        chunks, n_chunks, priorities = self.chunks, len(self.chunks), self.priorities
        if op == "push":
            push = impl.push
            return BATCH * _rate(lambda k: push(chunks[k % n_chunks]), self.min_ops, self.budget, self.clock)
        if op == "sample":
            sample = impl.sample
            return _rate(lambda k: sample(), self.min_ops, self.budget, self.clock)
        cycle = impl.cycle
        return _rate(lambda k: cycle(priorities[k % 1024]), self.min_ops, self.budget, self.clock)


# ---------------------------------------------------------------------------------------------- DI-engine worker
# ``--worker di-engine`` runs under DI-engine's interpreter and imports DI-engine's ``ding`` (never this project's: the
# script's folder, tests/benchmark, is first on sys.path, not the repository root). It fills its buffer, says
# "ready", then answers one measurement per line read ("push", "sample", "cycle") until "quit".

def _worker_di_engine(capacity: int, min_ops: int, budget: float, clock: str) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever DI-engine prints goes to stderr, never into the protocol
    random.seed(0)
    np.random.seed(0)
    from easydict import EasyDict

    import ding
    from ding.utils import deep_merge_dicts
    from ding.worker.replay_buffer import AdvancedReplayBuffer

    cfg = EasyDict(deep_merge_dicts(AdvancedReplayBuffer.default_config(), dict(replay_buffer_size=capacity)))
    workload = Workload(capacity, min_ops, budget, clock)
    impl = _FreshItemsAdapter(DI_ENGINE_NAME,
                              AdvancedReplayBuffer(cfg, exp_name="bench_buffer", instance_name="buffer"))
    fill_s = workload.fill(impl)
    _send(protocol, {"ready": True, "version": getattr(ding, "__version__", "?"), "fill_s": fill_s})
    for line in sys.stdin:
        op = line.strip()
        if op == "quit":
            break
        _send(protocol, {"op": op, "per_s": workload.measure(impl, op)})
    impl.buffer.close()


class _FreshItemsAdapter(AdvancedAdapter):
    """DI-engine's buffer writes ``replay_buffer_idx`` into the pushed dicts themselves, so a dict pushed twice (the
    push measurement cycles through the same transitions) would break its own checks: push shallow copies."""

    def push(self, chunk: list[dict]) -> None:
        self.buffer.push(list(map(dict.copy, chunk)), cur_collector_envstep=0)


def _send(stream: IO[str], record: dict) -> None:
    stream.write(json.dumps(record) + "\n")


class DiEngineProcess:
    """DI-engine's buffer in a subprocess of ``python``; ``measure(op)`` asks it for one measurement."""

    name = DI_ENGINE_NAME

    def __init__(self, python: str, capacity: int, min_ops: int, budget: float, clock: str) -> None:
        exe = shutil.which(python)
        if exe is None:
            raise ValueError(f"--di-engine-python {python!r} is not an executable interpreter; pass the python of a "
                             "virtualenv with di-engine==0.5.3 (see docs/benchmarks.md)")
        self._dir = tempfile.mkdtemp(prefix="bench_buffer_di_engine_")  # DI-engine writes ./bench_buffer/log here
        self._stderr = open(os.path.join(self._dir, "stderr.log"), "w+")
        cmd = [os.path.abspath(exe), os.path.abspath(__file__), "--worker", "di-engine", "--capacity", str(capacity),
               "--min-ops", str(min_ops), "--budget", str(budget), "--clock", clock]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self._proc = subprocess.Popen(cmd, cwd=self._dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True, bufsize=1, env=env)
        try:
            self.ready = self._read()
        except BaseException:
            self.close()
            raise

    def _read(self) -> dict:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # closed its output but hangs on exit
                self._proc.kill()
                self._proc.wait()
            self._stderr.seek(0)
            tail = self._stderr.read()[-3000:]
            raise RuntimeError(f"the DI-engine worker ({self._proc.args[0]}) exited with {self._proc.returncode} "
                               f"before answering; is DI-engine 0.5.3 installed in that interpreter? Its stderr:\n"
                               f"{tail}")
        return json.loads(line)

    def measure(self, op: str) -> float:
        assert self._proc.stdin is not None
        self._proc.stdin.write(op + "\n")
        return float(self._read()["per_s"])

    def close(self) -> None:
        try:
            if self._proc.poll() is None:
                try:
                    assert self._proc.stdin is not None
                    self._proc.stdin.write("quit\n")
                    self._proc.stdin.close()
                    self._proc.wait(timeout=30)
                except (OSError, subprocess.TimeoutExpired):
                    self._proc.kill()
                    self._proc.wait()
        finally:
            self._stderr.close()
            shutil.rmtree(self._dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one run (used by the test suite)")
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.6, help="seconds per measurement")
    parser.add_argument("--min-ops", type=int, default=50, help="calls per measurement at least")
    parser.add_argument("--di-engine-python", default=os.environ.get("DING_BENCH_DI_ENGINE_PYTHON"),
                        help="interpreter of a virtualenv with di-engine==0.5.3: measure its AdvancedReplayBuffer too")
    parser.add_argument("--baselines", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure the deque, numpy O(N) and naive-buffer references (default: yes)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall: elapsed time; cpu: the process's CPU time, which a loaded machine disturbs less "
                             "(time spent waiting for a core does not count)")
    parser.add_argument("--worker", choices=["di-engine"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    capacity, repeats, budget, min_ops = args.capacity, args.repeats, args.budget, args.min_ops
    if args.worker:
        _worker_di_engine(capacity, min_ops, budget, args.clock)
        return []
    if args.smoke:
        capacity, repeats, budget, min_ops = 2_000, 1, 0.0, 20

    random.seed(0)
    np.random.seed(0)
    workload = Workload(capacity, min_ops, budget, args.clock)
    impls: list[Any] = [DequeBaseline(capacity), NumpyPrioritizedBaseline(capacity), ding_buffer("naive", capacity)]
    impls = (impls if args.baselines else []) + [ding_buffer("advanced", capacity)]
    fill_s = {impl.name: workload.fill(impl) for impl in impls}  # every measurement runs on a full buffer
    peer: DiEngineProcess | None = None
    runs: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    try:
        if args.di_engine_python:
            peer = DiEngineProcess(args.di_engine_python, capacity, min_ops, budget, args.clock)
            fill_s[peer.name] = peer.ready["fill_s"]
            print(f"DI-engine worker ready: ding {peer.ready['version']} from {args.di_engine_python}, filled in "
                  f"{peer.ready['fill_s']:.1f} s", flush=True)
        for _ in range(repeats):  # interleaved: each repeat measures every implementation once
            for impl in impls:
                for op in OPS:
                    runs[impl.name, op].append(workload.measure(impl, op))
            if peer is not None:
                for op in OPS:
                    runs[peer.name, op].append(peer.measure(op))
    finally:
        if peer is not None:
            peer.close()
    return report(runs, capacity, repeats, fill_s, [impl.name for impl in impls] + ([peer.name] if peer else []),
                  args.clock)


def report(runs: dict[tuple[str, str], list[float]], capacity: int, repeats: int, fill_s: dict[str, float],
           names: list[str], clock: str) -> list[dict]:
    units = {"push": "items/s", "sample": "calls/s", "cycle": "calls/s"}
    results = [{"bench": "buffer", "impl": name, "op": op, "per_s": round(statistics.median(values), 1),
                "unit": units[op], "capacity": capacity, "batch": BATCH, "repeats": repeats,
                "runs": [round(v, 1) for v in values], "fill_s": round(fill_s[name], 2), "clock": clock}
               for (name, op), values in runs.items()]
    median = {(r["impl"], r["op"]): r["per_s"] for r in results}
    ours, numpy_per, deque_ = "ding advanced", NumpyPrioritizedBaseline.name, DequeBaseline.name
    ratios: dict[str, Any] = {"bench": "buffer_ratios", "capacity": capacity, "repeats": repeats, "clock": clock}
    for op in OPS:
        if (numpy_per, op) in median:
            ratios[f"advanced_vs_numpy_per_{op}"] = round(median[ours, op] / median[numpy_per, op], 2)
            ratios[f"advanced_vs_deque_{op}"] = round(median[ours, op] / median[deque_, op], 2)
            ratios[f"naive_vs_deque_{op}"] = round(median["ding naive", op] / median[deque_, op], 2)
        if (DI_ENGINE_NAME, op) in median:
            ratios[f"advanced_vs_di_engine_{op}"] = round(median[ours, op] / median[DI_ENGINE_NAME, op], 2)
    if (DI_ENGINE_NAME, "cycle") in median:
        # the ratio per repeat too: the spread says how much the machine's load moved during the run
        ratios["advanced_vs_di_engine_cycle_runs"] = [
            round(a / b, 2) for a, b in zip(runs[ours, "cycle"], runs[DI_ENGINE_NAME, "cycle"])]
        ratios[f"advanced_cycle_target_{TARGET_RATIO:g}x_met"] = ratios["advanced_vs_di_engine_cycle"] >= TARGET_RATIO
    results.append(ratios)

    print(f"capacity {capacity:,}, batch {BATCH}, medians of {repeats} run(s), {clock} clock")
    print(f"{'implementation':<26} {'push items/s':>14} {'sample(64)/s':>14} {'sample+update/s':>16} {'fill s':>8}")
    for name in names:
        print(f"{name:<26} {median[name, 'push']:>14,.0f} {median[name, 'sample']:>14,.0f} "
              f"{median[name, 'cycle']:>16,.0f} {fill_s[name]:>8.2f}")
    if "advanced_vs_numpy_per_cycle" in ratios:
        print(f"{'advanced / numpy O(N)':<26} {ratios['advanced_vs_numpy_per_push']:>13}x "
              f"{ratios['advanced_vs_numpy_per_sample']:>13}x {ratios['advanced_vs_numpy_per_cycle']:>15}x")
    if "advanced_vs_di_engine_cycle" in ratios:
        print(f"{'advanced / DI-engine':<26} {ratios['advanced_vs_di_engine_push']:>13}x "
              f"{ratios['advanced_vs_di_engine_sample']:>13}x {ratios['advanced_vs_di_engine_cycle']:>15}x")
        print(f"ding advanced sample+update = {ratios['advanced_vs_di_engine_cycle']}x DI-engine 0.5.3's in this run "
              f"(per repeat: {ratios['advanced_vs_di_engine_cycle_runs']}); target {TARGET_RATIO:g}x met: "
              f"{ratios[f'advanced_cycle_target_{TARGET_RATIO:g}x_met']}")
    else:
        print("DI-engine 0.5.3: not measured (pass --di-engine-python PATH, the interpreter of a virtualenv with "
              "di-engine==0.5.3; see docs/benchmarks.md)")
    for r in results:
        print(json.dumps(r))
    return results


if __name__ == "__main__":
    main()
