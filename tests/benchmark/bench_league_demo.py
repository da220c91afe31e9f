"""DI-engine 0.5.3's league demo (``dizoo/league_demo/league_demo_ppo_main.py`` and the three modules it imports,
taken from the 0.5.3 wheel as a user's own files): process wall time under ding and under DI-engine, interleaved.

    python tests/benchmark/bench_league_demo.py --di-engine-python /tmp/die-venv/bin/python --seeds 0 1 2
    python tests/benchmark/bench_league_demo.py --max-env-step 0      # no cap: run to both stop values (ding only)
    python tests/benchmark/bench_league_demo.py --smoke               # tiny run, used by the test suite

Each run is a fresh process (``league_demo_driver.py``, timed from start to exit, so imports count) in its own
temporary directory holding the user's files; ding's runs put this checkout first on ``PYTHONPATH``, DI-engine's
import DI-engine's ``ding`` from its own venv. Both with one torch/OpenMP thread.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

from tests.di_engine_files import league_demo_project  # noqa: E402


def run_demo(python: str, ding_checkout: str | None, max_env_step: int, seed: int, timeout: float) -> dict:
    """One demo process; ``ding_checkout`` first on PYTHONPATH (None: the interpreter's own ``ding``)."""
    with tempfile.TemporaryDirectory(prefix="league_demo_") as tmp:
        league_demo_project(tmp)
        shutil.copy(os.path.join(HERE, "league_demo_driver.py"), tmp)
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", DING_TORCH_THREADS="1")
        env.pop("PYTHONPATH", None)
        if ding_checkout:
            env["PYTHONPATH"] = ding_checkout
        cmd = [python, "league_demo_driver.py", str(max_env_step or int(1e8)), str(seed)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"league demo failed ({python}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    result = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    result["process_wall_s"] = round(wall, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--di-engine-python", default=os.environ.get("DING_BENCH_DI_ENGINE_PYTHON"),
                        help="interpreter of a venv with di-engine==0.5.3 (and gym, trueskill): run it too")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--max-env-step", type=int, default=20_000, help="0: no cap")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.max_env_step, args.seeds, args.di_engine_python = 256, [0], None
    frameworks = [("ding", sys.executable, ROOT)]
    if args.di_engine_python:
        frameworks.append(("DI-engine 0.5.3", args.di_engine_python, None))
    walls: dict[str, list[float]] = {name: [] for name, _, _ in frameworks}
    for seed in args.seeds:
        for name, python, checkout in frameworks:
            r = run_demo(python, checkout, args.max_env_step, seed, args.timeout)
            walls[name].append(r["process_wall_s"])
            print(json.dumps({"framework": name, "load_avg": os.getloadavg()[0], **r}), flush=True)
    summary = {name: statistics.median(w) for name, w in walls.items()}
    if len(frameworks) == 2:
        summary["ratio_ding_to_di_engine"] = round(summary["ding"] / summary["DI-engine 0.5.3"], 3)
    print(json.dumps({"summary": summary, "max_env_step": args.max_env_step, "seeds": args.seeds}))


if __name__ == "__main__":
    main()
