"""Env steps/s of the ``env_pool`` manager against envpool's own ceiling, next to the ``base`` manager, on MuJoCo.

Run by hand: ``python tests/benchmark/bench_envpool.py`` (``--smoke`` for a tiny run; ``--env-id`` /``--envs``). Three
contenders step ``--envs`` envs of the same task with the same pre-drawn random actions:

- ``envpool (ceiling)``: ``envpool.make(...).step(actions)`` on the whole batch in a bare loop: what envpool itself
  gives, the most a manager on it can reach;
- ``env_pool manager``: ding's ``PoolEnvManager`` (dicts of per-env actions in, ``BaseEnvTimestep`` dicts out);
- ``base manager``: ding's ``BaseEnvManager`` over the ``mujoco`` env type (gymnasium's Python envs in this process).

Each figure is the median of ``--repeats`` runs taken in turn, and the ratios are formed per repeat (the machine is
shared and noisy). Needs the ``[mujoco]`` and ``[envpool]`` extras.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np

from ding.envs import create_env_manager


def _actions(steps: int, env_num: int, act_dim: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, (steps, env_num, act_dim)).astype(np.float32)


def bench_ceiling(env_id: str, actions: np.ndarray) -> float:
    import envpool

    env_num = actions.shape[1]
    pool = envpool.make(env_id, env_type="gymnasium", num_envs=env_num, batch_size=env_num, seed=0)
    try:
        pool.reset()
        ids = np.arange(env_num, dtype=np.int32)
        start = time.perf_counter()
        for a in actions:
            pool.step(a.astype(np.float64), ids)
        return actions.shape[0] * env_num / (time.perf_counter() - start)
    finally:
        pool.close()


def bench_manager(manager_type: str, env_id: str, actions: np.ndarray) -> float:
    from dizoo.mujoco.envs import MujocoEnv

    env_num = actions.shape[1]
    cfgs = MujocoEnv.create_collector_env_cfg(dict(env_id=env_id, collector_env_num=env_num))
    manager: Any = create_env_manager(dict(type=manager_type), [partial(MujocoEnv, cfg=c) for c in cfgs])
    manager.seed(0)
    manager.launch()
    try:
        start = time.perf_counter()
        steps = 0
        for a in actions:
            ready = manager.ready_obs
            steps += len(manager.step({i: a[i] for i in ready}))
        return steps / (time.perf_counter() - start)
    finally:
        manager.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="Hopper-v5")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=2000, help="batched steps per run")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--smoke", action="store_true", help="tiny run (the test suite's)")
    args = p.parse_args(argv)
    if args.smoke:
        args.envs, args.steps, args.repeats = 2, 20, 1
    act_dim = {"Hopper-v5": 3, "HalfCheetah-v5": 6, "Walker2d-v5": 6, "Ant-v5": 8}.get(args.env_id)
    if act_dim is None:
        raise SystemExit(f"--env-id: one of Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5, got {args.env_id!r}")
    actions = _actions(args.steps, args.envs, act_dim)
    runs: dict[str, list[float]] = {"ceiling": [], "env_pool": [], "base": []}
    for _ in range(args.repeats):
        runs["ceiling"].append(bench_ceiling(args.env_id, actions))
        runs["env_pool"].append(bench_manager("env_pool", args.env_id, actions))
        runs["base"].append(bench_manager("base", args.env_id, actions))
    ratio_pool = statistics.median(p / c for p, c in zip(runs["env_pool"], runs["ceiling"]))
    ratio_base = statistics.median(b / c for b, c in zip(runs["base"], runs["ceiling"]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = {"env_id": args.env_id, "envs": args.envs, "steps": args.steps, "repeats": args.repeats,
              "median_steps_per_s": {k: statistics.median(v) for k, v in runs.items()},
              "env_pool_over_ceiling": ratio_pool, "base_over_ceiling": ratio_base, "load_avg_1min": load}
    med = result["median_steps_per_s"]
    print(f"{args.env_id}, {args.envs} envs, {args.steps} batched steps, median of {args.repeats} "
          f"(load average {load:.1f} on {os.cpu_count()} cores):")
    print(f"  envpool (ceiling)  {med['ceiling']:>10,.0f} env steps/s")
    print(f"  env_pool manager   {med['env_pool']:>10,.0f} env steps/s  ({ratio_pool:.2f}x the ceiling)")
    print(f"  base manager       {med['base']:>10,.0f} env steps/s  ({ratio_base:.2f}x the ceiling)")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
