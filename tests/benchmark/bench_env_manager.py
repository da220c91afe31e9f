"""Env steps/s of every env manager on 8 CartPole envs with random actions, next to gymnasium's vector envs.

Run by hand: ``python tests/benchmark/bench_env_manager.py`` (``--smoke`` for a tiny run). Each figure is the median
of ``--repeats`` runs; ratios compare with gymnasium ``SyncVectorEnv`` (and ``AsyncVectorEnv`` for the subprocess
managers) measured in the same repeat, since the machine is shared and noisy. Actions are drawn up front with numpy
(the same stream for every contender), so action sampling is not part of the figure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import gymnasium as gym
import numpy as np

from ding.envs import create_env_manager
from dizoo.classic_control.cartpole.envs import CartPoleEnv

MANAGERS = ("base", "subprocess", "async_subprocess")


def _gym_cartpole() -> gym.Env:
    return gym.make("CartPole-v1", max_episode_steps=200)  # CartPole-v0 semantics without its deprecation warning


def bench_vector(kind: str, env_num: int, actions: np.ndarray) -> float:
    """Env steps/s of gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv`` (autoreset inside)."""
    cls = gym.vector.SyncVectorEnv if kind == "sync" else gym.vector.AsyncVectorEnv
    envs = cls([_gym_cartpole for _ in range(env_num)])
    try:
        envs.reset(seed=0)
        start = time.perf_counter()
        for a in actions:
            envs.step(a)
        return actions.size / (time.perf_counter() - start)
    finally:
        envs.close()


def bench_manager(manager_type: str, env_num: int, actions: list[list[int]]) -> tuple[float, float]:
    """(env steps/s, launch seconds) of one ding env manager type."""
    cfg: dict[str, Any] = {"type": manager_type}
    manager = create_env_manager(cfg, [partial(CartPoleEnv, {}) for _ in range(env_num)])
    with manager:
        manager.seed(0)
        start = time.perf_counter()
        manager.launch()
        launch_s = time.perf_counter() - start
        n = 0
        start = time.perf_counter()
        for row in actions:
            n += len(manager.step({i: row[i] for i in manager.ready_obs_id}))
        return n / (time.perf_counter() - start), launch_s


def run(env_num: int, steps: int, subprocess_steps: int, repeats: int, managers: tuple[str, ...]) -> list[dict]:
    rng = np.random.default_rng(0)
    acts = rng.integers(0, 2, size=(steps, env_num))
    sub_acts = acts[:subprocess_steps]
    raw: dict[str, list[float]] = {k: [] for k in ("SyncVectorEnv", "AsyncVectorEnv", *managers)}
    ratio_sync: dict[str, list[float]] = {m: [] for m in managers}
    ratio_async: dict[str, list[float]] = {m: [] for m in managers}
    launch: dict[str, list[float]] = {m: [] for m in managers}
    need_async = any(m != "base" for m in managers)
    for _ in range(repeats):
        sync_ref = bench_vector("sync", env_num, acts)
        raw["SyncVectorEnv"].append(sync_ref)
        async_ref = bench_vector("async", env_num, sub_acts) if need_async else float("nan")
        raw["AsyncVectorEnv"].append(async_ref)
        for m in managers:
            a = acts if m == "base" else sub_acts
            rate, launch_s = bench_manager(m, env_num, a.tolist())
            raw[m].append(rate)
            launch[m].append(launch_s)
            ratio_sync[m].append(rate / sync_ref)
            ratio_async[m].append(rate / async_ref)
    results = []
    for name, rates in raw.items():
        if not rates or (name == "AsyncVectorEnv" and not need_async):
            continue
        row = {"bench": "env_manager", "name": name, "env_num": env_num, "repeats": repeats,
               "env_steps_per_s": round(statistics.median(rates), 1)}
        if name in managers:
            row["ratio_to_sync_vector_env"] = round(statistics.median(ratio_sync[name]), 3)
            if name != "base":
                row["ratio_to_async_vector_env"] = round(statistics.median(ratio_async[name]), 3)
            row["launch_s"] = round(statistics.median(launch[name]), 3)
        results.append(row)
    return results


def _col(row: dict, key: str, width: int) -> str:
    return f"{row[key]:>{width}}" if key in row else f"{'-':>{width}}"


def print_report(results: list[dict], out: Callable[[str], Any] = print) -> None:
    out(f"{'contender':<18}{'env steps/s':>14}{'x SyncVectorEnv':>17}{'x AsyncVectorEnv':>18}{'launch s':>10}")
    for r in results:
        out(f"{r['name']:<18}{r['env_steps_per_s']:>14,.0f}{_col(r, 'ratio_to_sync_vector_env', 17)}"
            f"{_col(r, 'ratio_to_async_vector_env', 18)}{_col(r, 'launch_s', 10)}")
    for r in results:
        out(json.dumps(r))


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny run (CI): checks the script works, figures mean nothing")
    p.add_argument("--env-num", type=int, default=8)
    p.add_argument("--steps", type=int, default=5000, help="manager steps (each steps every env) for in-process runs")
    p.add_argument("--subprocess-steps", type=int, default=1500, help="manager steps for subprocess runs")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--managers", default=",".join(MANAGERS), help="comma-separated env manager types")
    args = p.parse_args(argv)
    if args.smoke:
        args.steps, args.subprocess_steps, args.repeats = 50, 20, 1
    managers = tuple(m for m in args.managers.split(",") if m)
    results = run(args.env_num, args.steps, args.subprocess_steps, args.repeats, managers)
    for r in results:
        r["smoke"] = args.smoke
    print_report(results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
