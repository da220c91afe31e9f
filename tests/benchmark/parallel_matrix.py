"""Parallel mode against serial over several configs and env kinds, and on/off A/Bs of its speed mechanisms
(issue #37, items 4 and 5): the runs behind ``bench_parallel.py --suite`` and ``--ab MECHANISM``.

Every run is a whole process, ``ding -m parallel -c CFG`` or ``ding -m serial -c CFG``, driven only by the config
file (no import of parallel mode's modules), so the harness measures what a user gets. A config is the shipped
parallel CartPole DQN config with a few hyperparameters changed (:data:`CONFIGS`: they differ the way users' configs
differ: evaluation frequency, ``n_sample``, batch size, network size) on :mod:`slow_cartpole` (2 ms per step of
Python work holding the GIL, of native work releasing it, or of waiting). Serial runs take the same hyperparameters
minus the parallel-only keys. Two figures per run: **wall**, from the process start to its exit, and **time to the
stop value**, from the start until the evaluation that reached it is in ``log/eval.csv``; a run that ends at its env
step budget without reaching the stop value counts its wall there (and is marked as not reached).
"""
from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KINDS = {"gil": "2 ms Python work holding the GIL", "native": "2 ms numpy work releasing the GIL",
         "wait": "2 ms sleep (a remote simulator)"}


class BenchConfig(NamedTuple):
    """One parallel config of the set: its name, what it changes, and the changes as dotted ``main_config`` paths."""

    name: str
    note: str
    main: Mapping[str, Any]


CONFIGS = {c.name: c for c in (
    BenchConfig("shipped", "the shipped config: n_sample 16, batch 64, net 128-128-64, eval every 40 iterations", {}),
    BenchConfig("eval-often", "eval every 10 iterations, n_sample 8, update_per_collect 5, batch 32, net 64-64",
                {"policy.eval.evaluator.eval_freq": 10, "policy.collect.n_sample": 8,
                 "policy.learn.update_per_collect": 5, "policy.learn.batch_size": 32,
                 "policy.model.encoder_hidden_size_list": [64, 64]}),
    BenchConfig("big-batch", "n_sample 64, update_per_collect 32, batch 128, net 256-256-128, eval every 80",
                {"policy.collect.n_sample": 64, "policy.learn.update_per_collect": 32,
                 "policy.learn.batch_size": 128, "policy.model.encoder_hidden_size_list": [256, 256, 128],
                 "policy.eval.evaluator.eval_freq": 80}),
    BenchConfig("wide-rare-eval", "net 512-512-256, n_sample 32, update_per_collect 16, eval every 160",
                {"policy.model.encoder_hidden_size_list": [512, 512, 256], "policy.collect.n_sample": 32,
                 "policy.learn.update_per_collect": 16, "policy.eval.evaluator.eval_freq": 160}),
)}


class Mechanism(NamedTuple):
    """A speed mechanism and how a run turns it on and off: config keys (dotted paths under ``main.`` or ``system.``;
    a value ``'<batch_size>'`` is the config's batch size), or ``env.DING_PARALLEL_OFF`` naming it
    (ding/parallel/mechanisms.py: the mechanisms that are no config key)."""

    name: str
    note: str
    on: Mapping[str, Any]
    off: Mapping[str, Any]


_OFF = "env.DING_PARALLEL_OFF"


def _env_toggled(name: str, off: str, note: str) -> Mechanism:
    return Mechanism(name, note, {}, {_OFF: off})


MECHANISMS = {m.name: m for m in (
    _env_toggled("role_start", "role_fork", "roles forked from the launcher vs exec'd (DING_PARALLEL_OFF=role_fork)"),
    _env_toggled("sample_cache", "sample_cache", "the learner's sample store (buffer-sized) vs none "
                                                 "(DING_PARALLEL_OFF=sample_cache)"),
)}

TEMPLATE = '''
import copy
from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
    main_config as _m, create_config as _c, system_config as _s)

main_config, create_config, system_config = copy.deepcopy(_m), copy.deepcopy(_c), copy.deepcopy(_s)


def _set(root, dotted, value):
    *head, last = dotted.split('.')
    for key in head:
        if key not in root:
            root[key] = {{}}
        root = root[key]
    root[last] = value


for _path, _value in {main!r}.items():
    _set(main_config, _path, _value)
for _path, _value in {system!r}.items():
    _set(system_config, _path, _value)
main_config.exp_name = {exp!r}
main_config.env.stop_value = {stop_value!r}
system_config.path_data = './{exp}/data'
system_config.path_policy = './{exp}/policy'
if {kind!r} is not None:
    create_config.env.type = 'cartpole_slow_bench'
    create_config.env.import_names = ['tests.benchmark.slow_cartpole']
    main_config.env.slow_ms, main_config.env.slow_kind = 2.0, {kind!r}
if {mode!r} == 'serial':
    del main_config.policy.learn.learner['learner_num'], main_config.policy.learn.learner['send_policy_freq']
    main_config.policy.collect.collector = dict()
    main_config.policy.other.commander = dict()
    for k in ('learner', 'collector', 'commander', 'comm_learner', 'comm_collector'):
        create_config.pop(k, None)
'''


def config_text(mode: str, kind: str | None, config: BenchConfig, stop_value: float,
                keys: Mapping[str, Any] | None = None, exp: str = "bench") -> str:
    """The config file of one run: ``config`` on the env ``kind`` (None: plain CartPole) in ``mode``, with the
    mechanism ``keys`` (``main.``/``system.`` dotted paths) set."""
    main = dict(config.main)
    system: dict[str, Any] = {}
    batch = main.get("policy.learn.batch_size", 64)
    for path, value in (keys or {}).items():
        value = batch if value == "<batch_size>" else value
        where, _, rest = path.partition(".")
        if where != "env":  # (env.*: the process's environment, see run_env)
            (main if where == "main" else system)[rest] = value
    return TEMPLATE.format(main=main, system=system, exp=exp, stop_value=stop_value, kind=kind, mode=mode)


def run_env(keys: Mapping[str, Any] | None) -> dict[str, str]:
    """The environment variables a mechanism's ``env.*`` keys set for the run."""
    return {path[4:]: str(value) for path, value in (keys or {}).items() if path.startswith("env.")}


def load() -> float:
    """The 1-minute load average (``uptime``)."""
    return os.getloadavg()[0]


def run_process(text: str, mode: str, seed: int, stop_value: float, flags: list[str] | None = None,
                exp: str = "bench", timeout_s: float = 900.0, env: Mapping[str, str] | None = None) -> dict:
    """Run ``ding -m MODE -c <text>`` (with ``env`` added to the environment) in a temporary directory; the process
    wall, the time its ``eval.csv`` first reached ``stop_value`` and its ``result`` file. Raises if it fails, times
    out or leaves a process behind."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cfg.py")
        with open(path, "w") as f:
            f.write(text)
        cmd = [sys.executable, "-m", "ding", "-m", mode, "-c", path, "-s", str(seed), *(flags or [])]
        pythonpath = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
        eval_csv = os.path.join(tmp, exp, "log", "eval.csv")
        t0 = time.perf_counter()
        reached_at: float | None = None
        with open(os.path.join(tmp, "out.txt"), "w+") as out:
            base = {k: v for k, v in os.environ.items() if k != "DING_PARALLEL_OFF"}  # (on: every mechanism)
            proc = subprocess.Popen(cmd, cwd=tmp, env=dict(base, PYTHONUNBUFFERED="1", PYTHONPATH=pythonpath,
                                                           **(env or {})),
                                    stdout=out, stderr=subprocess.STDOUT, text=True)
            try:
                while proc.poll() is None:  # watch eval.csv: the time the stop value was reached, without shutdown
                    if reached_at is None and reached(eval_csv, stop_value) is not None:
                        reached_at = time.perf_counter() - t0
                    if time.perf_counter() - t0 > timeout_s:
                        raise RuntimeError(f"{mode} run (seed {seed}) took over {timeout_s:.0f} s")
                    time.sleep(0.05)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            wall = time.perf_counter() - t0
            out.seek(0)
            log = out.read()
        if proc.returncode != 0:
            raise RuntimeError(f"{mode} run failed (seed {seed}, exit {proc.returncode}):\n{log[-4000:]}")
        with open(os.path.join(tmp, exp, "result")) as f:
            result = json.load(f)
        row = reached(eval_csv, stop_value)
        left = processes_in(tmp)
        deadline = time.monotonic() + 10.0  # a subprocess env manager's workers may still be on their way out
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = processes_in(tmp)
        if left:
            raise RuntimeError(f"{mode} run left processes behind: {left}")
    return {"mode": mode, "seed": seed, "wall_s": wall, "result": result, "reached_row": row,
            "time_to_stop_s": (reached_at if reached_at is not None else wall) if row is not None else None}


def reached(eval_csv: str, stop_value: float) -> dict | None:
    """The first row of ``eval.csv`` at or above the stop value (None: none yet)."""
    try:
        with open(eval_csv, newline="") as f:
            for row in csv.DictReader(f):
                try:
                    if float(row["eval_return_mean"]) >= stop_value:
                        return row
                except (KeyError, TypeError, ValueError):
                    continue  # a row being written
    except OSError:
        pass
    return None


def processes_in(directory: str) -> list[int]:
    """Processes whose working directory is under ``directory``."""
    found = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/cwd").startswith(directory):
                    found.append(int(pid))
            except OSError:
                pass
    return found


class Budget(NamedTuple):
    """How long one run may go: the stop value, and the env steps after which it ends without reaching it."""

    stop_value: float = 195.0
    env_step: int = 12000


def one_run(mode: str, kind: str | None, config: BenchConfig, seed: int, budget: Budget,
            keys: Mapping[str, Any] | None = None) -> dict:
    """One process of the matrix, as a flat record: wall, time to the stop value (the wall where it was not
    reached, flagged by ``reached``), env steps to it, and the load around it."""
    before = load()
    r = run_process(config_text(mode, kind, config, budget.stop_value, keys), mode, seed, budget.stop_value,
                    ["--env-step", str(budget.env_step)], env=run_env(keys))
    row = r["reached_row"]
    return {"mode": mode, "kind": kind, "config": config.name, "seed": seed, "wall_s": r["wall_s"],
            "reached": row is not None, "time_to_stop_s": r["time_to_stop_s"] if row is not None else r["wall_s"],
            "env_step_to_stop": int(row["env_step"]) if row is not None else None,
            "env_step": r["result"]["env_step"], "train_iter": r["result"]["train_iter"],
            "load_before": before, "load_after": load()}


def median(values: list[float]) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def suite(configs: list[str], kinds: list[str], seeds: list[int], budget: Budget,
          runner: Callable[..., dict] | None = None, echo: Callable[[str], None] = print) -> list[dict]:
    """Item 5: each config on each env kind, parallel against serial; the two runs of one seed back to back (the
    order alternating by seed, so a drift in the machine's load hits both alike), the seeds in turn. One record per
    (config, kind): the runs, the medians and the per-seed ratios parallel / serial. ``runner``: :func:`one_run`
    unless given."""
    runner = runner or one_run
    rows: dict[tuple[str, str], list[tuple[dict, dict]]] = {(c, k): [] for k in kinds for c in configs}
    for seed in seeds:
        for kind in kinds:
            for name in configs:
                modes = ("serial", "parallel") if seed % 2 == 0 else ("parallel", "serial")
                got = {m: runner(m, kind, CONFIGS[name], seed, budget) for m in modes}
                rows[(name, kind)].append((got["serial"], got["parallel"]))
                s, p = got["serial"], got["parallel"]
                echo(f"  {kind:<6} {name:<15} seed {seed}: serial {_fmt(s)}  parallel {_fmt(p)}  "
                     f"to stop {p['time_to_stop_s'] / s['time_to_stop_s']:.2f}x  wall {p['wall_s'] / s['wall_s']:.2f}x")
    return [_pair_record("parallel_suite", name, kind, pairs, "serial", "parallel")
            for (name, kind), pairs in rows.items()]


def ab(mechanism: str, cases: list[tuple[str, str]], seeds: list[int], budget: Budget,
       runner: Callable[..., dict] | None = None, echo: Callable[[str], None] = print) -> list[dict]:
    """Item 4: the parallel config of each (config, kind) case with ``mechanism`` on and off, back to back per seed
    (the order alternating by seed), the cases and seeds in turn. One record per case with the ratios on / off.
    ``runner``: :func:`one_run` unless given."""
    runner = runner or one_run
    mech = MECHANISMS[mechanism]
    rows: dict[tuple[str, str], list[tuple[dict, dict]]] = {case: [] for case in cases}
    for seed in seeds:
        for name, kind in cases:
            order = (("on", mech.on), ("off", mech.off)) if seed % 2 == 0 else (("off", mech.off), ("on", mech.on))
            got = {side: runner("parallel", kind, CONFIGS[name], seed, budget, keys) for side, keys in order}
            rows[(name, kind)].append((got["off"], got["on"]))
            off, on = got["off"], got["on"]
            echo(f"  {mechanism:<15} {kind:<6} {name:<15} seed {seed}: on {_fmt(on)}  off {_fmt(off)}  to stop "
                 f"{on['time_to_stop_s'] / off['time_to_stop_s']:.2f}x  wall {on['wall_s'] / off['wall_s']:.2f}x")
    return [dict(_pair_record("parallel_ab", name, kind, pairs, "off", "on"), mechanism=mechanism)
            for (name, kind), pairs in rows.items()]


def _fmt(r: dict) -> str:
    return f"{r['time_to_stop_s']:5.1f} s{'' if r['reached'] else '*'} (exit {r['wall_s']:5.1f} s)"


def _pair_record(bench: str, name: str, kind: str, pairs: list[tuple[dict, dict]], ref: str, new: str) -> dict:
    """Medians of the reference (``ref``) and measured (``new``) sides of a case, and the ratios new / ref: of the
    medians, and per seed."""
    refs, news = [p[0] for p in pairs], [p[1] for p in pairs]
    rec: dict[str, Any] = {"bench": bench, "config": name, "kind": kind, "seeds": [p[0]["seed"] for p in pairs],
                           "runs": {ref: refs, new: news}}
    for key in ("time_to_stop_s", "wall_s"):
        rec[f"{ref}_{key}"] = median([r[key] for r in refs])
        rec[f"{new}_{key}"] = median([r[key] for r in news])
        rec[f"{key}_ratio"] = rec[f"{new}_{key}"] / rec[f"{ref}_{key}"]
        rec[f"{key}_seed_ratios"] = [n[key] / r[key] for r, n in pairs]
    rec["reached"] = {ref: sum(r["reached"] for r in refs), new: sum(r["reached"] for r in news), "of": len(pairs)}
    rec["load"] = [min(r["load_before"] for r in refs + news), max(r["load_after"] for r in refs + news)]
    return rec


KEEP_AT = 0.90  # a mechanism stays where on / off of the time to the stop value is at most this (a gain >= 10 %)


def verdict(records: list[dict]) -> dict:
    """One mechanism's A/B records -> its median on/off ratio per case and over the cases, and keep or delete."""
    per_case = {f"{r['config']}/{r['kind']}": r["time_to_stop_s_ratio"] for r in records}
    overall = median(list(per_case.values()))
    wall = median([r["wall_s_ratio"] for r in records])
    return {"mechanism": records[0]["mechanism"], "per_case": per_case, "median_ratio": overall,
            "median_wall_ratio": wall, "keep": overall <= KEEP_AT}


def suite_table(records: list[dict]) -> str:
    """Markdown: one row per (kind, config) with medians and per-seed ratios parallel / serial."""
    lines = ["| env kind | config | serial to stop (s) | parallel to stop (s) | parallel / serial to stop | "
             "per seed | serial exit (s) | parallel exit (s) | parallel / serial exit | reached s / p |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        seeds = " ".join(f"{x:.2f}" for x in r["time_to_stop_s_seed_ratios"])
        lines.append(f"| {r['kind']} | {r['config']} | {r['serial_time_to_stop_s']:.1f} | "
                     f"{r['parallel_time_to_stop_s']:.1f} | **{r['time_to_stop_s_ratio']:.2f}×** | {seeds} | "
                     f"{r['serial_wall_s']:.1f} | {r['parallel_wall_s']:.1f} | {r['wall_s_ratio']:.2f}× | "
                     f"{r['reached']['serial']}/{r['reached']['parallel']} of {r['reached']['of']} |")
    for kind in dict.fromkeys(r["kind"] for r in records):
        ratios = [r["time_to_stop_s_ratio"] for r in records if r["kind"] == kind]
        walls = [r["wall_s_ratio"] for r in records if r["kind"] == kind]
        lines.append(f"| {kind} | **median over configs** | | | **{median(ratios):.2f}×** (worst "
                     f"{max(ratios):.2f}×) | | | | {median(walls):.2f}× | |")
    return "\n".join(lines)


def ab_table(verdicts: list[dict], records: list[dict]) -> str:
    """Markdown: one row per mechanism, the on/off ratio of each case, the median and the verdict."""
    cases = list(dict.fromkeys(f"{r['config']}/{r['kind']}" for r in records))
    lines = ["| mechanism | " + " | ".join(cases) + " | median on/off to stop | median on/off exit | verdict | "
             "seeds | load |", "|---|" + "---|" * (len(cases) + 5)]
    for v in verdicts:
        recs = [r for r in records if r["mechanism"] == v["mechanism"]]
        counts = sorted({len(r["seeds"]) for r in recs})
        seeds = "–".join(str(n) for n in (counts[0], counts[-1]) if n) if counts[0] != counts[-1] else str(counts[0])
        lo, hi = min(r["load"][0] for r in recs), max(r["load"][1] for r in recs)
        cells = " | ".join(f"{v['per_case'][c]:.2f}×" if c in v["per_case"] else "–" for c in cases)
        lines.append(f"| {v['mechanism']} | {cells} | **{v['median_ratio']:.2f}×** | {v['median_wall_ratio']:.2f}× | "
                     f"{'keep' if v['keep'] else 'delete'} | {seeds} | {lo:.1f}–{hi:.1f} |")
    return "\n".join(lines)
