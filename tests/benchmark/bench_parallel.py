"""Parallel mode next to the serial pipeline on the same hyperparameters, in one run (issues #16 and #37).

    python tests/benchmark/bench_parallel.py --suite --seeds 8   # 4 configs x 3 slow-env kinds, parallel vs serial
    python tests/benchmark/bench_parallel.py --suite --kinds native --configs shipped,big-batch
    python tests/benchmark/bench_parallel.py --ab sample_cache   # one speed mechanism on and off (see --help)
    python tests/benchmark/bench_parallel.py --ab all --seeds 8  # every mechanism of parallel_matrix.MECHANISMS
    python tests/benchmark/bench_parallel.py                  # all three setups, seeds 0-2, one summary table
    python tests/benchmark/bench_parallel.py --setups b,c     # only the step-cost setups
    python tests/benchmark/bench_parallel.py --repeats 3      # the time-to-195 runs three rounds: medians of 9 runs
    python tests/benchmark/bench_parallel.py --setups d       # 1 learner next to 2 learners (learner iterations/s)
    python tests/benchmark/bench_parallel.py --setups e       # the learner's ceiling: the update beside collection
    python tests/benchmark/bench_parallel.py --smoke          # tiny budgets, used by the test suite

Every run is a whole process (``ding -m serial`` / ``ding -m parallel``), so imports, process start-up and the
evaluations count. ``--suite`` and ``--ab`` are issue #37's held-out check and mechanism A/Bs: the configs, env
kinds and mechanisms are in :mod:`parallel_matrix`; each prints its runs, one JSON line per record and Markdown
tables (the verdict of an A/B: keep a mechanism where on/off of the time to the stop value is <= 0.90 on the median of
the cases). The older setups:

* **(a) CartPole**, plain: time and env steps to eval >= 195 with 1 and 2 collectors, and **throughput**: a fixed
  budget of train iterations with the stop value out of reach; env steps collected per second and learner iterations
  per second over the run's training time, without process start-up on either side (serial: ``result.wall_time_s``,
  from the built components to the end; parallel: ``result.train_time_s``, from the first collector's start to the
  end of the shutdown).
* **(b) 2 ms of CPU per step** (``cartpole_step_cost``, ``step_cost_kind='cpu'``: Python work holding the GIL),
  1 learner + 2 collectors against serial, both with the ``base`` env manager: time and env steps to 195.
* **(c) 2 ms of waiting per step** (``step_cost_kind='wait'``, like a remote simulator), 4 collectors with the
  ``base`` env manager against serial with the ``base`` manager and serial with the ``subprocess`` manager.

* **(d) several learners**: CartPole with 2 collectors, 1 learner next to 2 learners sharing gradients
  (``learner_num=2``, the LearnerAggregator and a gloo group): learner iterations per second over the run's training
  time for a fixed budget of train iterations (stop value out of reach), and its ratio to the 1-learner line. The
  learner is not paced by collection here (``learner_iter_per_sample=0``), so the figure is the learners' own speed.
* **(e) the learner's ceiling on this machine**: no parallel run. The update of (a)'s learner line alone in a process,
  and the same while a second process does the collectors' work flat out (the same config's serial collector and
  evaluator): on 2 cores the second ratio bounds what (a)'s learner line can reach in any design that collects while
  it trains, before transport or a coordinator cost anything.

**Time to 195** is from the process start until the evaluation that reached it is in ``log/eval.csv`` (so the
shutdown after it does not count; the process wall time is in the JSON lines too). **Env steps to 195** is that
evaluation's ``env_step``: in serial mode the env steps collected before it, in parallel mode the env steps collected
when the evaluated policy was published (collection that goes on while an evaluation runs did not train it).
Serial and parallel runs of one seed run back to back, so a change in the machine's load hits both. The serial runs
use the parallel config's hyperparameters (n_sample, update_per_collect, batch size, eps schedule, eval_freq), minus
the parallel-only keys. Each run must exit 0 with no process left behind.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from typing import NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import parallel_matrix as pm  # noqa: E402

CONFIG = '''
import copy
from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
    main_config as _m, create_config as _c, system_config as _s)

MODE = {mode!r}
STEP_COST = {step_cost!r}
main_config = copy.deepcopy(_m)
main_config.exp_name = {exp!r}
main_config.env.stop_value = {stop_value!r}
create_config = copy.deepcopy(_c)
system_config = copy.deepcopy(_s)
system_config.path_data = './{exp}/data'
system_config.path_policy = './{exp}/policy'
main_config.policy.collect.collector.collector_num = {collectors}
main_config.policy.learn.learner.learner_num = {learners}
if {unpaced!r}:  # (d): the learner trains as fast as it can on what the buffer holds
    main_config.policy.other.commander.learner_iter_per_sample = 0
create_config.env_manager.type = {manager!r}
if STEP_COST is not None:
    create_config.env.type = 'cartpole_step_cost'
    create_config.env.import_names = ['dizoo.classic_control.cartpole.envs.step_cost_cartpole_env']
    main_config.env.step_cost_ms, main_config.env.step_cost_kind = STEP_COST
if MODE == 'serial':
    del main_config.policy.learn.learner['learner_num'], main_config.policy.learn.learner['send_policy_freq']
    main_config.policy.collect.collector = dict()
    main_config.policy.other.commander = dict()
    for k in ('learner', 'collector', 'commander', 'comm_learner', 'comm_collector'):
        create_config.pop(k, None)
'''


class Setup(NamedTuple):
    """One line of the summary: a mode, its collectors, the env's step cost and the env manager."""

    key: str  # 'a', 'b', 'c'
    mode: str  # 'serial' or 'parallel'
    collectors: int = 0  # parallel only
    step_cost: tuple[float, str] | None = None  # (ms, 'cpu' | 'wait'); None: plain CartPole
    manager: str = "base"
    learners: int = 1  # parallel only: policy.learn.learner.learner_num
    unpaced: bool = False  # parallel only: learner_iter_per_sample = 0 (training not paced by collection)

    @property
    def label(self) -> str:
        who = f"parallel, {self.collectors} collector{'s' if self.collectors > 1 else ''}" if self.mode == "parallel" \
            else "serial"
        if self.learners > 1:
            who += f", {self.learners} learners"
        return f"{who} ({self.manager})"


def run(setup: Setup, seed: int, stop_value: float = 195.0, train_iter: int | None = None) -> dict:
    mode = setup.mode
    text = CONFIG.format(mode=mode, exp="bench", stop_value=stop_value, collectors=max(setup.collectors, 1),
                         manager=setup.manager, step_cost=setup.step_cost, learners=setup.learners,
                         unpaced=setup.unpaced)
    flags = ["--train-iter", str(train_iter)] if train_iter is not None else []
    r = pm.run_process(text, mode, seed, stop_value, flags)
    result, row, wall = r["result"], r["reached_row"], r["wall_s"]
    # training time without process start-up on both sides: a serial run's wall_time_s starts once its components
    # are built; a parallel run's train_time_s once its first collector started (the roles' imports are over)
    train_wall = max(result.get("train_time_s") or result["wall_time_s"], 1e-9)
    return {"setup": setup.key, "mode": mode, "collectors": setup.collectors, "manager": setup.manager,
            "step_cost": setup.step_cost, "seed": seed, "wall_s": wall, "time_to_stop_s": r["time_to_stop_s"],
            "env_step_to_stop": int(row["env_step"]) if row is not None else None,
            "train_wall_s": train_wall, "env_step": result["env_step"], "train_iter": result["train_iter"],
            "stop_flag": result["stop_flag"], "best_eval_return": result.get("best_eval_return"),
            "env_steps_per_s": result["env_step"] / train_wall, "iters_per_s": result["train_iter"] / train_wall,
            # the learner's own iterations/s while it had a batch (parallel runs; None for serial ones)
            "learner_busy_iters_per_s": (result.get("learner") or {}).get("busy_iters_per_s")}


def _median(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else float("nan")



# the targets of issue #16 item 5, for the parallel line of a setup: (time, env steps) as ratios to the setup's first
# serial line, at most (None: no target)
TARGETS: dict[str, tuple[float, float | None]] = {"b": (0.7, 1.5), "c": (0.4, None)}
CPU2, WAIT2 = (2.0, "cpu"), (2.0, "wait")
SETUPS = {
    "a": [Setup("a", "serial"), Setup("a", "parallel", 1), Setup("a", "parallel", 2)],
    "b": [Setup("b", "serial", step_cost=CPU2), Setup("b", "parallel", 2, step_cost=CPU2)],
    "c": [Setup("c", "serial", step_cost=WAIT2), Setup("c", "serial", step_cost=WAIT2, manager="subprocess"),
          Setup("c", "parallel", 4, step_cost=WAIT2)],
    "d": [Setup("d", "parallel", 2, unpaced=True), Setup("d", "parallel", 2, learners=2, unpaced=True)],
    "e": [],  # the learner's ceiling on this machine (learner_ceiling): no parallel run
}


def to_stop(setups: list[Setup], seeds: list[int], repeats: int = 1) -> list[dict]:
    """Time and env steps to 195 for each setup; the setups of one seed run back to back, the seeds in turn, and the
    whole round ``repeats`` times. A line's medians are over all its runs (seeds x repeats); with repeats, each
    round's own ratio (medians over the seeds of that round, as one run of the command without repeats would give)
    is kept too, so the spread between rounds shows."""
    runs: dict[Setup, list[dict]] = {s: [] for s in setups}
    for rep in range(repeats):
        for seed in seeds:
            for s in setups:
                r = dict(run(s, seed), repeat=rep)
                runs[s].append(r)
                again = f" (round {rep + 1}/{repeats})" if repeats > 1 else ""
                print(f"  ({s.key}) {s.label:<32} seed {seed}{again}: {r['time_to_stop_s'] or float('nan'):6.1f} s to "
                      f"195, {r['env_step_to_stop'] or 0:7,} env steps (process {r['wall_s']:.1f} s)", flush=True)
    out = []
    serial = runs[setups[0]]
    for s, rows in runs.items():
        rec = {"bench": "parallel_to_195", "setup": s.key, "label": s.label, "mode": s.mode,
               "collectors": s.collectors, "manager": s.manager, "step_cost": s.step_cost, "runs": rows,
               "median_time_s": _median(rows, "time_to_stop_s"), "median_env_step": _median(rows, "env_step_to_stop"),
               "median_wall_s": _median(rows, "wall_s"), "reached": sum(bool(r["stop_flag"]) for r in rows)}
        rec["time_ratio"] = rec["median_time_s"] / _median(serial, "time_to_stop_s")
        rec["env_step_ratio"] = rec["median_env_step"] / _median(serial, "env_step_to_stop")
        rec["round_time_ratios"] = [
            _median([r for r in rows if r["repeat"] == rep], "time_to_stop_s")
            / _median([r for r in serial if r["repeat"] == rep], "time_to_stop_s") for rep in range(repeats)]
        rec["time_ratio_to"] = {o.label: rec["median_time_s"] / _median(runs[o], "time_to_stop_s")
                                for o in setups[1:] if o.mode == "serial" and o != s}
        out.append(rec)
    return out


def throughput(setups: list[Setup], seeds: list[int], iters: int) -> list[dict]:
    out: list[dict] = []
    serial_rate = None
    for s in setups:
        rows = [run(s, seed, stop_value=1e9, train_iter=iters) for seed in seeds]
        rec = {"bench": "parallel_throughput", "setup": s.key, "label": s.label, "mode": s.mode,
               "collectors": s.collectors, "step_cost": s.step_cost, "runs": rows,
               "env_steps_per_s": _median(rows, "env_steps_per_s"), "iters_per_s": _median(rows, "iters_per_s")}
        if s.mode == "serial":
            serial_rate = rec["env_steps_per_s"]
        rec["ratio_to_serial"] = rec["env_steps_per_s"] / serial_rate if serial_rate else None
        out.append(rec)
        ratio = f"{rec['ratio_to_serial']:.2f}x serial" if rec["ratio_to_serial"] else ""
        print(f"  {s.label:<32} {rec['env_steps_per_s']:8,.0f} env steps/s  {rec['iters_per_s']:7,.0f} iters/s  "
              f"{ratio}", flush=True)
    return out


def learners(setups: list[Setup], seeds: list[int], iters: int) -> list[dict]:
    """(d): learner iterations/s of each setup (medians over the seeds), as a ratio to the first (1 learner). The
    setups of one seed run back to back."""
    runs: dict[Setup, list[dict]] = {s: [] for s in setups}
    for seed in seeds:
        for s in setups:
            r = run(s, seed, stop_value=1e9, train_iter=iters)
            runs[s].append(r)
            print(f"  (d) {s.label:<44} seed {seed}: {r['iters_per_s']:6.1f} iters/s "
                  f"({r['train_iter']} iterations in {r['train_wall_s']:.1f} s)", flush=True)
    ones = runs[setups[0]]
    return [{"bench": "parallel_learners", "setup": s.key, "label": s.label, "learners": s.learners, "runs": rows,
             "iters_per_s": _median(rows, "iters_per_s"), "env_steps_per_s": _median(rows, "env_steps_per_s"),
             # the median of the ratios of runs side by side (same seed, back to back): the load hits both alike
             "ratio_to_one_learner": statistics.median(r["iters_per_s"] / o["iters_per_s"]
                                                       for r, o in zip(rows, ones))} for s, rows in runs.items()]


UPDATE_ONLY = r"""
import json, sys, time
import torch
from ding.config import compile_config, read_config
from ding.utils import setup_torch_threads
from ding.worker.builder import build_learning

setup_torch_threads()
main, create = read_config(sys.argv[1])
cfg = compile_config(main, create_cfg=create, seed=0, save_cfg=False)
side = build_learning(cfg, seed=0)
learner = side.learner
g = torch.Generator().manual_seed(0)
def sample():
    return dict(obs=torch.randn(4, generator=g), next_obs=torch.randn(4, generator=g),
                action=torch.randint(0, 2, (1,), generator=g).squeeze(0), reward=torch.rand(1, generator=g),
                done=bool(torch.rand(1, generator=g).item() < 0.05))
pool = [sample() for _ in range(2048)]
batches = [[pool[(i * 64 + j * 7) % len(pool)] for j in range(64)] for i in range(64)]
n = int(sys.argv[2])
for i in range(50):
    learner.train(batches[i % 64])
t0 = time.perf_counter()
for i in range(n):
    learner.train(batches[i % 64])
rate = n / (time.perf_counter() - t0)
side.close()
print(json.dumps({"update_only_iters_per_s": rate}))
"""


def _plain_serial_config(directory: str, exp: str) -> str:
    """Write (a)'s config in serial mode, stop value out of reach, to ``directory/cfg.py``; its path."""
    path = os.path.join(directory, "cfg.py")
    with open(path, "w") as f:
        f.write(CONFIG.format(mode="serial", exp=exp, stop_value=1e9, collectors=1, manager="base", step_cost=None,
                              learners=1, unpaced=False))
    return path


def update_only_rate(iters: int, seeds: list[int]) -> float:
    """The learner's update alone in a serial process: the same config's DQN update (policy learn mode + BaseLearner
    with its hooks) on batches of 64 made-up CartPole transitions, no collection or evaluation (median over the
    seeds' repeats). The reference of the learner's iterations/s inside a parallel run."""
    rates = []
    for _ in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            path = _plain_serial_config(tmp, "bench_update")
            out = subprocess.run([sys.executable, "-c", UPDATE_ONLY, path, str(iters)], cwd=tmp, capture_output=True,
                                 text=True, timeout=900)
            if out.returncode != 0:
                raise RuntimeError(f"update-only run failed:\n{out.stderr[-4000:]}")
            rates.append(json.loads(out.stdout.strip().splitlines()[-1])["update_only_iters_per_s"])
    return statistics.median(rates)


NEIGHBOUR = r"""
import sys
from ding.config import compile_config, read_config
from ding.utils import setup_torch_threads
from ding.worker.builder import build_acting

setup_torch_threads()
main, create = read_config(sys.argv[1])
cfg = compile_config(main, create_cfg=create, seed=0, save_cfg=False)
side = build_acting(cfg, seed=0)
print("ready", flush=True)
i = 0
while True:  # the collectors' work, flat out: collect tasks of n_sample, an evaluation every 40 train iterations' worth
    side.collector.collect(n_sample=16, train_iter=i, policy_kwargs=dict(eps=0.5))
    i += 1
    if i % 4 == 0:
        side.evaluator.eval(train_iter=i, envstep=side.collector.envstep)
"""


def learner_ceiling(iters: int, seeds: list[int]) -> list[dict]:
    """(e) the most a learner can reach on this machine while collection runs: the same update alone, and beside one
    process doing the collectors' work flat out (the serial collector and evaluator of the same config, no transport,
    no coordinator), alternated over the seeds' repeats. Its ratio bounds the learner target of (a) from above for any
    design that collects while it trains on the same cores."""
    alone, beside = [], []
    for k, _ in enumerate(seeds):
        for with_neighbour in ((False, True) if k % 2 == 0 else (True, False)):
            if not with_neighbour:
                alone.append(update_only_rate(iters, [0]))
                continue
            with tempfile.TemporaryDirectory() as tmp:
                path = _plain_serial_config(tmp, "bench_neighbour")
                nb = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, path], cwd=tmp, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
                try:
                    line = nb.stdout.readline() if nb.stdout else ""
                    if "ready" not in line:
                        rest = nb.stdout.read() if nb.stdout else ""
                        raise RuntimeError(f"the neighbour process did not start:\n{line}{rest[-4000:]}")
                    beside.append(update_only_rate(iters, [0]))
                finally:
                    nb.kill()
                    nb.wait()
    ref, near = statistics.median(alone), statistics.median(beside)
    print(f"  update alone {ref:7,.0f} iters/s   beside the collectors' work {near:7,.0f} iters/s   {near / ref:.2f}x",
          flush=True)
    return [{"bench": "parallel_learner_ceiling", "setup": "e", "label": "update beside the collectors' work",
             "alone": alone, "beside": beside, "iters_per_s": near, "update_only_iters_per_s": ref,
             "ratio": near / ref}]


def learner_rate(seeds: list[int], iters: int, paced: list[dict]) -> list[dict]:
    """(a) the learner's own speed inside a parallel run, against the same update alone in a serial process (target:
    >= 0.8x). Two measures: **busy** -- the learner of the paced throughput runs with 2 collectors (``paced``: their
    rows), its iterations per second while it had a batch (the time its training thread waited for the next batch
    left out: that is collection's speed, measured by the throughput line); and **not paced** -- iterations/s over
    the whole run when collection does not pace the learner (``learner_iter_per_sample=0``), with both collectors
    collecting flat out beside it on the same cores (CPU sharing, not the learner, sets that figure on 2 cores)."""
    rows = [run(Setup("a", "parallel", 2, unpaced=True), seed, stop_value=1e9, train_iter=iters) for seed in seeds]
    ref = update_only_rate(iters, seeds)
    rate = _median(rows, "iters_per_s")
    busy = _median(paced, "learner_busy_iters_per_s")
    print(f"  parallel learner, busy (paced) {busy:7,.0f} iters/s  not paced {rate:7,.0f} iters/s  serial process, "
          f"update only {ref:7,.0f} iters/s  {busy / ref:.2f}x / {rate / ref:.2f}x", flush=True)
    return [{"bench": "parallel_learner_rate", "setup": "a", "label": "parallel learner, busy (paced run)",
             "runs": paced, "iters_per_s": busy, "update_only_iters_per_s": ref, "ratio": busy / ref},
            {"bench": "parallel_learner_rate", "setup": "a", "label": "parallel learner, not paced", "runs": rows,
             "iters_per_s": rate, "update_only_iters_per_s": ref, "ratio": rate / ref}]


def summary(out: list[dict]) -> str:
    """One table: every setup's medians, the ratio to its serial reference and the target next to it."""
    lines = ["", "summary (medians over the seeds and rounds; ratios are to the first serial line of the same setup, "
             "measured in this run):",
             f"  {'setup':<28} {'mode':<32} {'time to 195':>11} {'env steps':>9} {'reached':>7} {'time':>6} "
             f"{'steps':>6}  target"]
    names = {"a": "(a) CartPole", "b": "(b) 2 ms CPU per step", "c": "(c) 2 ms wait per step"}
    for rec in out:
        if rec["bench"] == "parallel_to_195":
            target = _target(rec) if rec["mode"] == "parallel" else ""
            rounds = rec.get("round_time_ratios") or []
            rounds_text = (" (rounds: " + " / ".join(f"{r:.2f}x" for r in rounds) + ")") \
                if len(rounds) > 1 and rec["mode"] == "parallel" else ""
            lines.append(f"  {names[rec['setup']]:<28} {rec['label']:<32} {rec['median_time_s']:9.1f} s "
                         f"{rec['median_env_step']:9,.0f} {rec['reached']:>4}/{len(rec['runs'])} "
                         f"{rec['time_ratio']:5.2f}x {rec['env_step_ratio']:5.2f}x  {target}{rounds_text}")
    for rec in out:
        if rec["bench"] == "parallel_throughput":
            target = "throughput >= 0.9x serial" if rec["mode"] == "parallel" else ""
            ratio = f"{rec['ratio_to_serial']:.2f}x" if rec["ratio_to_serial"] else "-"
            lines.append(f"  {'(a) throughput':<28} {rec['label']:<32} {rec['env_steps_per_s']:7,.0f} env steps/s "
                         f"{rec['iters_per_s']:6,.0f} iters/s {ratio:>6}  {target}")
    for rec in out:
        if rec["bench"] == "parallel_learner_rate":
            target = ("target >= 0.8x: " + ("met" if rec["ratio"] >= 0.8 else "NOT met")) if "busy" in rec["label"] \
                else "(reference: 2 collectors flat out on the same cores)"
            lines.append(f"  {'(a) learner':<28} {rec['label']:<32} {rec['iters_per_s']:6,.0f} iters/s against "
                         f"{rec['update_only_iters_per_s']:,.0f} update-only in a serial process: "
                         f"{rec['ratio']:.2f}x  {target}")
    for rec in out:
        if rec["bench"] == "parallel_learner_ceiling":
            lines.append(f"  {'(e) learner ceiling':<28} {rec['label']:<32} {rec['iters_per_s']:6,.0f} iters/s against "
                         f"{rec['update_only_iters_per_s']:,.0f} alone: {rec['ratio']:.2f}x  (bounds (a)'s learner)")
    for rec in out:
        if rec["bench"] == "parallel_learners":
            lines.append(f"  {'(d) learners':<28} {rec['label']:<44} {rec['iters_per_s']:6.1f} iters/s "
                         f"{rec['ratio_to_one_learner']:5.2f}x one learner (median of the seeds' ratios)")
    return "\n".join(lines)


def _target(rec: dict) -> str:
    """The target next to a parallel line, and whether this run met it; also its ratio to the other serial lines."""
    text = "; ".join(f"{r:.2f}x {label}" for label, r in rec.get("time_ratio_to", {}).items() if "serial" in label)
    text = f"(time {text})  " if text else ""
    if rec["setup"] not in TARGETS:
        return text
    time_max, steps_max = TARGETS[rec["setup"]]
    met = rec["time_ratio"] <= time_max and (steps_max is None or rec["env_step_ratio"] <= steps_max)
    goal = f"time <= {time_max:.2f}x" + (f", env steps <= {steps_max:.1f}x" if steps_max is not None else "")
    return f"{text}target {goal}: {'met' if met else 'NOT met'}"


AB_CASES = ("shipped:gil", "eval-often:native", "big-batch:gil")  # --ab: each config on another env kind


def _names(ap: argparse.ArgumentParser, flag: str, text: str, known: Iterable[str]) -> list[str]:
    """The comma-separated names of ``flag``; one usage error naming the unknown ones and the choices."""
    names, choices = [n.strip() for n in text.split(",") if n.strip()], list(known)
    unknown = [n for n in names if n not in choices]
    if unknown or not names:
        ap.error(f"{flag}: unknown or no names {unknown}; choose from {', '.join(choices)}")
    return names


def matrix(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[dict]:
    """``--suite`` and ``--ab``: the runs of :mod:`parallel_matrix`, their JSON lines and their Markdown tables."""
    budget = pm.Budget(args.stop_value, args.env_step)
    seeds = list(range(args.seeds))
    out: list[dict] = []
    print(f"load at start: {pm.load():.2f}", flush=True)
    if args.suite:
        configs = _names(ap, "--configs", args.configs, pm.CONFIGS)
        kinds = _names(ap, "--kinds", args.kinds, pm.KINDS)
        print(f"parallel / serial, stop value {budget.stop_value:g}, at most {budget.env_step} env steps:", flush=True)
        out += pm.suite(configs, kinds, seeds, budget)
        print(f"CartPole throughput ({args.iters} train iterations, stop value out of reach):", flush=True)
        out += throughput([Setup("a", "serial"), Setup("a", "parallel", 2)], seeds, args.iters)
    verdicts = []
    if args.ab:
        mechanisms = list(pm.MECHANISMS) if args.ab == "all" else _names(ap, "--ab", args.ab, pm.MECHANISMS)
        cases = []
        for case in _names(ap, "--cases", args.cases, [f"{c}:{k}" for c in pm.CONFIGS for k in pm.KINDS]):
            name, _, kind = case.partition(":")
            cases.append((name, kind))
        for mech in mechanisms:
            print(f"{mech}: {pm.MECHANISMS[mech].note}", flush=True)
            recs = pm.ab(mech, cases, seeds, budget)
            out += recs
            verdicts.append(pm.verdict(recs))
    for rec in out:
        print(json.dumps(rec))
    print(f"load at end: {pm.load():.2f}")
    suite_recs = [r for r in out if r["bench"] == "parallel_suite"]
    if suite_recs:
        print(pm.suite_table(suite_recs))
        for rec in (r for r in out if r["bench"] == "parallel_throughput"):
            ratio = f"{rec['ratio_to_serial']:.2f}x serial" if rec["ratio_to_serial"] else ""
            print(f"  CartPole throughput, {rec['label']}: {rec['env_steps_per_s']:,.0f} env steps/s {ratio}")
    if verdicts:
        print(pm.ab_table(verdicts, [r for r in out if r["bench"] == "parallel_ab"]))
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny budgets (CI): one seed, no convergence runs")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1500, help="train iterations of the throughput runs")
    ap.add_argument("--setups", default="a,b,c", help="which setups to run, e.g. 'b,c' (default: all)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of the time-to-195 runs: every seed again, medians over all runs (default: 1)")
    ap.add_argument("--suite", action="store_true",
                    help="issue #37 item 5: parallel against serial over --configs x --kinds, and CartPole throughput")
    ap.add_argument("--ab", metavar="MECHANISM", default=None,
                    help=f"issue #37 item 4: one mechanism on and off over --cases; one of {', '.join(pm.MECHANISMS)}"
                         " (comma-separated for several, 'all' for every one)")
    ap.add_argument("--configs", default=",".join(pm.CONFIGS), help="--suite: configs of the set")
    ap.add_argument("--kinds", default=",".join(pm.KINDS), help="--suite: env kinds (gil, native, wait)")
    ap.add_argument("--cases", default=",".join(AB_CASES),
                    help="--ab: config:kind pairs (default: %(default)s)")
    ap.add_argument("--stop-value", type=float, default=150.0, help="--suite/--ab: the runs' stop value")
    ap.add_argument("--env-step", type=int, default=8000,
                    help="--suite/--ab: env steps after which a run ends without reaching the stop value")
    args = ap.parse_args(argv)
    if args.suite or args.ab:
        return matrix(ap, args)
    if args.repeats < 1:
        ap.error(f"--repeats: expected a number of rounds >= 1, got {args.repeats}")
    keys = [k.strip() for k in args.setups.split(",") if k.strip()]
    unknown = [k for k in keys if k not in SETUPS]
    if unknown:
        ap.error(f"--setups: unknown setup(s) {unknown}; choose from {sorted(SETUPS)}")
    out: list[dict] = []
    seeds = [0] if args.smoke else list(range(args.seeds))
    if args.smoke:
        iters = 60
        print(f"throughput ({iters} train iterations, stop value out of reach):")
        out += throughput([Setup("a", "serial"), Setup("a", "parallel", 2)], seeds, iters)
        print("step-cost env (30 train iterations, 2 ms CPU per step):")
        out += throughput([Setup("b", "parallel", 2, step_cost=CPU2)], seeds, 30)
        return out
    for key in keys:
        if key == "e":
            print(f"(e) the learner's ceiling: the update alone and beside the collectors' work ({args.iters} "
                  "iterations):", flush=True)
            out += learner_ceiling(args.iters, seeds)
            continue
        if key == "d":
            print(f"(d) learner iterations/s ({args.iters} train iterations, stop value out of reach):", flush=True)
            out += learners(SETUPS["d"], seeds, args.iters)
            continue
        print(f"({key}) to eval >= 195:", flush=True)
        out += to_stop(SETUPS[key], seeds, args.repeats)
        if key == "a":
            print(f"(a) throughput ({args.iters} train iterations, stop value out of reach):", flush=True)
            out += throughput(SETUPS["a"], seeds, args.iters)
            paced = next(r["runs"] for r in out if r["bench"] == "parallel_throughput" and r["collectors"] == 2)
            print(f"(a) the learner's own speed (busy in the runs above; not paced: {2 * args.iters} train "
                  "iterations):", flush=True)
            out += learner_rate(seeds, 2 * args.iters, paced)
    for rec in out:
        print(json.dumps({k: v for k, v in rec.items() if k != "runs"}))
    print(summary(out))
    return out


if __name__ == "__main__":
    main()
