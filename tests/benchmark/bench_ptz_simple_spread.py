"""DI-engine 0.5.3's own ``ptz_simple_spread_<algo>_config.py`` files, run by ding and by DI-engine side by side.

    python tests/benchmark/bench_ptz_simple_spread.py mappo --seeds 0 1 2 --env-step 96000 --target -150 \
        --di-engine-python /path/to/die-venv/bin/python --plot docs/images/ptz_mappo.png
    python tests/benchmark/bench_ptz_simple_spread.py mappo --seeds 0 1 2 --env-step 96000 --target -150 \
        --di-engine-python /path/to/die-venv/bin/python --train-starts fresh

Each run is one process with the unchanged file (read from DI-engine's wheel), ``--env-step`` as its budget (the
files' ``stop_value=0`` is never reached): ding through ``ding -m serial[_onpolicy]``, DI-engine through its
``serial_pipeline[_onpolicy]`` in its own venv (PettingZoo 1.22.3 and gymnasium 0.27.1, what its env imports), its
evaluator wrapped to record each evaluation's mean return. Runs are interleaved (ding seed 0, DI-engine seed 0,
ding seed 1, ...). Printed per run: the eval curve, the env steps and wall seconds (since process start) at which
the mean eval return first reached ``--target``, the last and best return; then medians over seeds and the
wall-time ratio ding / DI-engine. One JSON line per run.

DI-engine's returns are put on ding's scale: PettingZoo 1.22's simple spread counts every agent as colliding with
itself (-1 per agent and step), so the same behaviour scores ``n_agent * max_cycles`` less there (75 for the MAPPO
file); ``return_offset`` says what was added, the raw curve is kept as ``raw_curve``.

Training starts (``--train-starts``). DI-engine 0.5.3's ``petting_zoo`` env resets with its one seed every episode
(it keeps ``dynamic_seed`` but never reads it), so collector env ``i`` replays one start state all run long: the one
evaluator env ``i`` plays (both are seeded ``seed + i``). Its evaluations are on the 8 starts it trains on; ding's
collectors draw a new start per episode and its evaluations are on starts they never saw. ``native`` runs each as it
ships; ``fresh`` gives DI-engine's collector envs a new start per episode (``seed + 100 * randint(1, 1000)``, the
convention of DI-engine's own envs, e.g. its cartpole) so both are evaluated on unseen starts; ``eval`` seeds ding's
collector envs without dynamic seeds, so both train on their evaluation starts (the same 8 in both: PettingZoo
1.22 and mpe2 draw a start the same way from the same seed).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ON_POLICY = {"mappo"}
ALGOS = ("mappo", "qmix", "vdn", "masac")
TRAIN_STARTS = ("native", "fresh", "eval")


def config_path(algo: str) -> str:
    return f"dizoo/petting_zoo/config/ptz_simple_spread_{algo}_config.py"


# ------------------------------------------------------------------------------------------------ workers
def ding_command(cfg_file: str, seed: int, env_step: int, on_policy: bool, train_starts: str) -> list[str]:
    """The ding run: the ``ding`` command, or (``train_starts='eval'``) its pipeline with the collector envs seeded
    without dynamic seeds, so collector env ``i`` replays evaluator env ``i``'s start as DI-engine's env does."""
    mode = "serial_onpolicy" if on_policy else "serial"
    if train_starts != "eval":
        return [sys.executable, "-m", "ding.entry.cli", "-m", mode, "-c", cfg_file, "-s", str(seed),
                "--env-step", str(env_step)]
    pipeline = "serial_pipeline_onpolicy" if on_policy else "serial_pipeline"
    code = (f"import sys; from ding.entry import {pipeline} as run; "
            "run(sys.argv[1], seed=int(sys.argv[2]), max_env_step=int(sys.argv[3]), dynamic_seed=False)")
    return [sys.executable, "-c", code, cfg_file, str(seed), str(env_step)]


def fresh_starts(env_cls: type) -> None:
    """Make ``env_cls.reset`` (DI-engine 0.5.3's ``PettingZooEnv``, which resets with ``self._seed`` every time) draw
    ``self._seed + 100 * randint(1, 1000)`` from numpy's global RNG when the env was seeded with ``dynamic_seed``
    (DI-engine's collector envs), as DI-engine's own envs do; ``self._seed`` is left as it was."""
    original = env_cls.reset

    def reset(self: Any) -> Any:
        if not (getattr(self, "_dynamic_seed", False) and hasattr(self, "_seed")):
            return original(self)
        import numpy as np

        base = self._seed
        self._seed = base + 100 * int(np.random.randint(1, 1000))
        try:
            return original(self)
        finally:
            self._seed = base

    env_cls.reset = reset


def _worker_ding(cfg_file: str, seed: int, env_step: int, on_policy: bool, train_starts: str) -> dict:
    import csv
    import subprocess

    t0 = time.time()
    subprocess.run(ding_command(cfg_file, seed, env_step, on_policy, train_starts), check=True,
                   capture_output=True, timeout=7200)
    wall = time.time() - t0
    exp = [d for d in os.listdir(".") if os.path.isdir(d) and d.startswith("ptz_")][0]
    with open(os.path.join(exp, "log", "eval.csv")) as f:
        rows = list(csv.DictReader(f))
    # eval.csv's wall_time counts from the run's start (after imports and set-up): shift it to process time
    start = wall - float(_result_wall(exp)) if _result_wall(exp) is not None else 0.0
    curve = [[int(r["env_step"]), float(r["wall_time"]) + start, float(r["eval_return_mean"])] for r in rows]
    return {"curve": curve, "wall": wall}


def _result_wall(exp: str) -> float | None:
    try:
        with open(os.path.join(exp, "result")) as f:
            return float(json.load(f).get("wall_time_s"))
    except (OSError, ValueError, TypeError):
        return None


def _worker_di_engine(cfg_file: str, seed: int, env_step: int, on_policy: bool, train_starts: str) -> dict:
    t0 = time.time()
    import numpy as np

    from ding.config import read_config
    from ding.entry import serial_pipeline, serial_pipeline_onpolicy
    from ding.worker import InteractionSerialEvaluator

    curve: list[list[float]] = []
    original = InteractionSerialEvaluator.eval

    def eval_and_record(self, save_ckpt_fn=None, train_iter=-1, envstep=-1, n_episode=None, *args, **kwargs):
        stop, info = original(self, save_ckpt_fn, train_iter, envstep, n_episode, *args, **kwargs)
        curve.append([int(envstep), time.time() - t0, float(np.mean(info["eval_episode_return"]))])
        return stop, info

    InteractionSerialEvaluator.eval = eval_and_record
    if train_starts == "fresh":  # before the env manager forks its workers (DI-engine's default start method)
        from dizoo.petting_zoo.envs.petting_zoo_simple_spread_env import PettingZooEnv

        fresh_starts(PettingZooEnv)
    main, create = read_config(cfg_file)
    pipeline = serial_pipeline_onpolicy if on_policy else serial_pipeline
    pipeline((main, create), seed=seed, max_env_step=env_step)
    return {"curve": curve, "wall": time.time() - t0}


def worker_main(argv: list[str]) -> None:
    framework, algo, seed, env_step = argv[0], argv[1], int(argv[2]), int(argv[3])
    cfg_file, train_starts = os.path.abspath(argv[4]), argv[5]
    fn = _worker_ding if framework == "ding" else _worker_di_engine
    out = fn(cfg_file, seed, env_step, algo in ON_POLICY, train_starts)
    print(json.dumps(out))


# ------------------------------------------------------------------------------------------------ driver
def on_dings_scale(res: dict, cfg_file: str) -> dict:
    """DI-engine's curve shifted by ``n_agent * max_cycles`` (PettingZoo 1.22's self-collision penalty)."""
    from ding.config import read_config

    env = read_config(cfg_file)[0].env
    offset = float(env.n_agent * env.max_cycles)
    return dict(res, raw_curve=res["curve"], return_offset=offset,
                curve=[[step, wall, ret + offset] for step, wall, ret in res["curve"]])


def first_reach(curve: list[list[float]], target: float) -> tuple[int | None, float | None]:
    for step, wall, ret in curve:
        if ret >= target:
            return int(step), float(wall)
    return None, None


def summarize(framework: str, algo: str, seed: int, res: dict, target: float, train_starts: str = "native") -> dict:
    step, wall = first_reach(res["curve"], target)
    rets = [c[2] for c in res["curve"]]
    return {"framework": framework, "algo": algo, "seed": seed, "train_starts": train_starts, "target": target,
            "return_offset": res.get("return_offset", 0.0), "env_step_to_target": step,
            "wall_to_target": wall, "last_return": rets[-1] if rets else None,
            "best_return": max(rets) if rets else None, "process_wall": res["wall"], "curve": res["curve"]}


def run_isolated(python: str, worker_args: list[str], timeout: float) -> dict:
    """One worker process in a temp dir; one torch/OpenMP thread. A DI-engine worker has neither this repository on
    its path nor the caller's PYTHONPATH (its venv must import its own ``ding``); a ding worker imports this checkout
    (PYTHONPATH is this repository), whatever ``ding`` the interpreter has installed. Returns its JSON line."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if worker_args[0] == "ding":
        env["PYTHONPATH"] = ROOT
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", DING_TORCH_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([python, os.path.abspath(__file__), "--worker", *worker_args], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"run failed ({' '.join(worker_args)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2:])
        return
    sys.path.insert(0, ROOT)
    from tests.di_engine_files import copy_di_engine_file
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("algo", choices=ALGOS)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--env-step", type=int, default=96000)
    ap.add_argument("--target", type=float, default=-150.0)
    ap.add_argument("--di-engine-python", default=None, help="interpreter of a venv with di-engine 0.5.3")
    ap.add_argument("--train-starts", choices=TRAIN_STARTS, default="native",
                    help="native: each framework as it ships (DI-engine trains on its evaluation starts); fresh: a "
                         "new start per training episode in both; eval: both train on their evaluation starts")
    ap.add_argument("--plot", default=None)
    ap.add_argument("--timeout", type=float, default=7200)
    args = ap.parse_args()
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = copy_di_engine_file(config_path(args.algo), tmp)
        for seed in args.seeds:
            runs = [("ding", sys.executable)] + ([("di-engine", args.di_engine_python)] if args.di_engine_python
                                                  else [])
            for framework, python in runs:
                res = run_isolated(python, [framework, args.algo, str(seed), str(args.env_step), cfg,
                                            args.train_starts], args.timeout)
                if framework == "di-engine":
                    res = on_dings_scale(res, cfg)
                row = summarize(framework, args.algo, seed, res, args.target, args.train_starts)
                results.append(row)
                print(json.dumps(row), flush=True)
    report(results, args)


def report(results: list[dict], args: argparse.Namespace) -> None:
    print(f"\n{args.algo}: target {args.target}, budget {args.env_step} env steps, seeds {args.seeds}, training "
          f"starts {getattr(args, 'train_starts', 'native')}")
    print(f"{'framework':<10} {'seed':>4} {'steps to target':>16} {'wall to target':>15} {'best':>8} {'last':>8} "
          f"{'process s':>10}")
    med: dict[str, list[float]] = {}
    for r in results:
        to_target = "-" if r["wall_to_target"] is None else f"{r['wall_to_target']:.1f}"
        print(f"{r['framework']:<10} {r['seed']:>4} {str(r['env_step_to_target']):>16} {to_target:>15} "
              f"{r['best_return']:>8.1f} "
              f"{r['last_return']:>8.1f} {r['process_wall']:>10.1f}")
        if r["wall_to_target"] is not None:
            med.setdefault(r["framework"], []).append(r["wall_to_target"])
    for fw, walls in med.items():
        print(f"{fw}: reached the target on {len(walls)} of {len(args.seeds)} seeds, median wall "
              f"{statistics.median(walls):.1f} s")
    if len(med) == 2 and all(len(v) == len(args.seeds) for v in med.values()):
        print(f"wall-time ratio ding / DI-engine (medians): "
              f"{statistics.median(med['ding']) / statistics.median(med['di-engine']):.2f}x")
    if args.plot:
        from tests.benchmark._peer_runs import plot_curves

        lines = [{"label": r["framework"], "seed": r["seed"], "dashed": r["framework"] != "ding", "curve": r["curve"]}
                 for r in results]
        plot_curves(lines, args.plot, f"ptz_simple_spread_{args.algo}_config.py (DI-engine 0.5.3's file)",
                    "eval return (team)", hlines=[(args.target, ":")])


if __name__ == "__main__":
    main()
