"""Parallel CartPole DQN next to the serial pipeline on the same hyperparameters, in one run.

    python tests/benchmark/bench_parallel.py             # 3 seeds to eval >= 195 + throughput, 1 and 2 collectors
    python tests/benchmark/bench_parallel.py --smoke     # tiny budgets, used by the test suite

Every run is a whole process (``ding -m serial`` / ``ding -m parallel``) timed from start to exit, so imports, process
start-up and shutdown count. Two measurements:

* **to 195**: process wall time and env steps until an evaluation reaches the stop value, per seed (medians);
* **throughput**: a fixed budget of train iterations with the stop value out of reach; env steps collected per second
  and learner iterations per second over the run's training time, without process start-up on either side (serial:
  ``result.wall_time_s``, from the built components to the end; parallel: ``result.train_time_s``, from the first
  collector's start to the end of the shutdown).

The serial runs use the parallel config's hyperparameters (n_sample, update_per_collect, batch size, eps schedule,
eval_freq), minus the parallel-only keys. Each run must exit 0 with no process left behind.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG = '''
import copy
from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
    main_config as _m, create_config as _c, system_config as _s)

MODE = {mode!r}
main_config = copy.deepcopy(_m)
main_config.exp_name = {exp!r}
main_config.env.stop_value = {stop_value!r}
create_config = copy.deepcopy(_c)
system_config = copy.deepcopy(_s)
system_config.path_data = './{exp}/data'
system_config.path_policy = './{exp}/policy'
main_config.policy.collect.collector.collector_num = {collectors}
if MODE == 'serial':
    del main_config.policy.learn.learner['learner_num'], main_config.policy.learn.learner['send_policy_freq']
    main_config.policy.collect.collector = dict()
    main_config.policy.other.commander = dict()
    for k in ('learner', 'collector', 'commander', 'comm_learner', 'comm_collector'):
        create_config.pop(k, None)
'''


def run(mode: str, seed: int, collectors: int = 2, stop_value: float = 195.0, train_iter: int | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        exp = f"bench_{mode}"
        path = os.path.join(tmp, "cfg.py")
        with open(path, "w") as f:
            f.write(CONFIG.format(mode=mode, exp=exp, stop_value=stop_value, collectors=collectors))
        cmd = [sys.executable, "-m", "ding", "-m", mode, "-c", path, "-s", str(seed)]
        if train_iter is not None:
            cmd += ["--train-iter", str(train_iter)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, env=dict(os.environ, PYTHONUNBUFFERED="1"), capture_output=True,
                              text=True, timeout=900)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{mode} run failed (seed {seed}, exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
                               f"{proc.stderr[-3000:]}")
        with open(os.path.join(tmp, exp, "result")) as f:
            result = json.load(f)
        left = _processes_in(tmp)
        if left:
            raise RuntimeError(f"{mode} run left processes behind: {left}")
    # training time without process start-up on both sides: a serial run's wall_time_s starts once its components
    # are built; a parallel run's train_time_s once its first collector started (the roles' imports are over)
    train_wall = max(result.get("train_time_s") or result["wall_time_s"], 1e-9)
    return {"mode": mode, "collectors": collectors if mode == "parallel" else 0, "seed": seed, "wall_s": wall,
            "train_wall_s": train_wall, "env_step": result["env_step"], "train_iter": result["train_iter"],
            "stop_flag": result["stop_flag"], "best_eval_return": result.get("best_eval_return"),
            "env_steps_per_s": result["env_step"] / train_wall, "iters_per_s": result["train_iter"] / train_wall}


def _processes_in(directory: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/cwd").startswith(directory):
                    found.append(int(pid))
            except OSError:
                pass
    return found


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny budgets (CI): one seed, no convergence runs")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1500, help="train iterations of the throughput runs")
    args = ap.parse_args(argv)
    setups = [("serial", 0), ("parallel", 1), ("parallel", 2)]
    out: list[dict] = []
    seeds = [0] if args.smoke else list(range(args.seeds))
    if not args.smoke:
        print("to eval >= 195 (process wall, env steps):")
        for mode, n in setups:
            rows = [run(mode, s, collectors=max(n, 1)) for s in seeds]
            rec = {"bench": "parallel_to_195", "mode": mode, "collectors": n, "runs": rows,
                   "median_wall_s": _median(rows, "wall_s"), "median_env_step": _median(rows, "env_step"),
                   "all_reached": all(r["stop_flag"] for r in rows)}
            out.append(rec)
            print(f"  {mode:<8} collectors={n}  median {rec['median_wall_s']:6.1f} s  "
                  f"{rec['median_env_step']:8,.0f} env steps  reached {sum(r['stop_flag'] for r in rows)}/"
                  f"{len(rows)}  walls {[round(r['wall_s'], 1) for r in rows]}")
    iters = 60 if args.smoke else args.iters
    print(f"throughput ({iters} train iterations, stop value out of reach):")
    serial_rate = None
    for mode, n in setups if not args.smoke else [("serial", 0), ("parallel", 2)]:
        rows = [run(mode, s, collectors=max(n, 1), stop_value=1e9, train_iter=iters) for s in seeds]
        rec = {"bench": "parallel_throughput", "mode": mode, "collectors": n, "runs": rows,
               "env_steps_per_s": _median(rows, "env_steps_per_s"), "iters_per_s": _median(rows, "iters_per_s")}
        if mode == "serial":
            serial_rate = rec["env_steps_per_s"]
        rec["ratio_to_serial"] = rec["env_steps_per_s"] / serial_rate if serial_rate else None
        out.append(rec)
        ratio = f"{rec['ratio_to_serial']:.2f}x serial" if rec["ratio_to_serial"] else ""
        print(f"  {mode:<8} collectors={n}  {rec['env_steps_per_s']:8,.0f} env steps/s  "
              f"{rec['iters_per_s']:7,.0f} iters/s  {ratio}")
    for rec in out:
        print(json.dumps({k: v for k, v in rec.items() if k != "runs"}))
    return out


if __name__ == "__main__":
    main()
