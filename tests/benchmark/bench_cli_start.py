"""Start-up of the ``ding`` command: process wall of ``ding --help`` and ``ding -m serial --help``.

    python tests/benchmark/bench_cli_start.py              # medians of 10 runs each
    python tests/benchmark/bench_cli_start.py --smoke      # 2 runs each (the test suite)

Next to them in the same run: a bare ``python -c pass`` (the interpreter's own start-up, the floor) and
``python -c "import torch"`` (what every training run pays once). The commands are interleaved so machine noise hits
all alike. Target (../shared/BENCHMARKS.md): ``ding --help`` <= 0.3 s.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "ding --help": [sys.executable, "-m", "ding.entry.cli", "--help"],
    "ding -m serial --help": [sys.executable, "-m", "ding.entry.cli", "-m", "serial", "--help"],
    "python -c 'import torch'": [sys.executable, "-c", "import torch"],
}


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="2 runs of each command (the test suite)")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    repeats = 2 if args.smoke else args.repeats
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(repeats):
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    floor = statistics.median(times["python -c pass"])
    results = [{"bench": "cli_start", "command": name, "median_s": round(statistics.median(ts), 3),
                "over_interpreter_s": round(statistics.median(ts) - floor, 3), "repeats": repeats}
               for name, ts in times.items()]
    print(f"{'command':<28} {'median wall':>12} {'minus python -c pass':>22}")
    for r in results:
        print(f"{r['command']:<28} {r['median_s']:>10.3f} s {r['over_interpreter_s']:>20.3f} s")
    for r in results:
        print(json.dumps(r))
    return results


if __name__ == "__main__":
    main()
