"""The hand-built CartPole DQN loop (SPEC section 1a, ``entry/cartpole_dqn_main.py``) on a quiet and on a busy machine.

    python tests/benchmark/bench_handbuilt_loop.py                 # 1,000 iterations, medians of 3 runs
    python tests/benchmark/bench_handbuilt_loop.py --iterations 1640 --repeats 5
    python tests/benchmark/bench_handbuilt_loop.py --smoke         # tiny run, used by the test suite

Every run is a fresh process that runs the example's loop for a fixed number of learner iterations (the stop value
is set out of reach, so every run does the same work), timed inside the process from the first worker built to the
last one closed: wall time, and the process's CPU time (with one thread it stays the same on a busy machine, while
OpenMP threads burn CPU waiting for each other). Two thread settings: ``ding`` (nothing set: the first worker built
applies ding's default of one torch thread) and ``torch`` (``DING_TORCH_THREADS`` set to the count torch starts
with: what a loop built by hand had before, the thread trap). Two machine states: ``quiet`` and ``busy`` (this
script starts one process that spins a CPU core for the run, and stops it). Runs are interleaved (quiet/busy x
ding/torch, repeated), so a change in the machine's own load hits every cell alike. The children start without
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``DING_TORCH_THREADS`` or ``OMP_WAIT_POLICY``, as a user's shell would.
Figures: median wall and CPU per cell, the ratio busy/quiet (the acceptance: <= 1.3 with ding's default on a
machine that is otherwise quiet) and torch/ding on the busy machine.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "DING_TORCH_THREADS", "OMP_WAIT_POLICY")
SETTINGS = ("ding", "torch")
LOADS = ("quiet", "busy")


def child(iterations: int, seed: int) -> dict:
    """Run the example's loop in this process; its wall time, work done and torch's thread count."""
    sys.path.insert(0, ROOT)
    from easydict import EasyDict

    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config
    from entry import cartpole_dqn_main

    cfg = EasyDict(json.loads(json.dumps(main_config)))
    cfg.env.stop_value = 1e9  # never reached: every run does `iterations` learner iterations
    t0, c0 = time.perf_counter(), time.process_time()
    cartpole_dqn_main.main(cfg, seed=seed, max_iterations=iterations)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    import torch

    return {"wall_s": wall, "cpu_s": cpu, "threads": torch.get_num_threads()}


def torch_start_threads() -> int:
    """The intra-op thread count torch starts with in a child (no thread variable set)."""
    code = "import torch; print(torch.get_num_threads())"
    return int(subprocess.run([sys.executable, "-c", code], env=_child_env(), capture_output=True, text=True,
                              check=True, timeout=300).stdout.strip())


def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def run_child(iterations: int, seed: int, extra_env: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--iterations", str(iterations),
               "--seed", str(seed)]
        proc = subprocess.run(cmd, cwd=tmp, env=_child_env(extra_env), capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"loop run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class Spinner:
    """One process spinning a CPU core while the ``with`` block runs (stopped also on error and Ctrl-C)."""

    def __enter__(self) -> Spinner:
        # it also stops by itself when this process goes away (checked on every turn of its loop)
        spin = f"import os\nwhile os.getppid() == {os.getpid()}:\n    pass"
        self._proc = subprocess.Popen([sys.executable, "-c", spin])
        time.sleep(0.5)  # let it get going
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=1000, help="learner iterations per run")
    p.add_argument("--repeats", type=int, default=3, help="runs per cell (medians are reported)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    p.add_argument("--smoke", action="store_true", help="a tiny run (20 iterations, ding's default only, once)")
    p.add_argument("--json", help="also write the result to this file")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        out = child(args.iterations, args.seed)
        print(json.dumps(out))
        return out
    if args.smoke:
        args.iterations, args.repeats, args.settings = 20, 1, ["ding"]

    start = torch_start_threads() if "torch" in args.settings else None
    envs = {"ding": {}, "torch": {"DING_TORCH_THREADS": str(start)}}
    walls: dict[str, list[float]] = {f"{load}/{s}": [] for load in LOADS for s in args.settings}
    cpus: dict[str, list[float]] = {k: [] for k in walls}
    threads: dict[str, int] = {}
    for rep in range(args.repeats):
        for load in LOADS:
            for setting in args.settings:
                key = f"{load}/{setting}"
                if load == "busy":
                    with Spinner():
                        out = run_child(args.iterations, args.seed, envs[setting])
                else:
                    out = run_child(args.iterations, args.seed, envs[setting])
                walls[key].append(out["wall_s"])
                cpus[key].append(out["cpu_s"])
                threads[setting] = out["threads"]
                print(f"run {rep + 1}/{args.repeats} {key:12s} {out['wall_s']:7.2f} s wall, {out['cpu_s']:7.2f} s "
                      f"CPU ({out['threads']} threads)", flush=True)
    med = {k: statistics.median(v) for k, v in walls.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpus.items()}
    result: dict = {"bench": "handbuilt_loop", "iterations": args.iterations, "repeats": args.repeats,
                    "torch_start_threads": start, "threads": threads, "median_wall_s": med, "walls_s": walls,
                    "median_cpu_s": med_cpu, "cpus_s": cpus,
                    "load_avg_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    for s in args.settings:
        result[f"busy_over_quiet_{s}"] = med[f"busy/{s}"] / med[f"quiet/{s}"]
    if "torch" in args.settings and "ding" in args.settings:
        result["busy_torch_over_ding"] = med["busy/torch"] / med["busy/ding"]
    print(f"\nhand-built CartPole DQN loop, {args.iterations} iterations, medians of {args.repeats} "
          f"(torch starts with {start or '?'} threads; load average now {result['load_avg_1min']})")
    for s in args.settings:
        print(f"  {s:5s} ({threads[s]} thread(s)): wall quiet {med[f'quiet/{s}']:.2f} s, busy "
              f"{med[f'busy/{s}']:.2f} s, busy/quiet {result[f'busy_over_quiet_{s}']:.2f}x; CPU quiet "
              f"{med_cpu[f'quiet/{s}']:.2f} s, busy {med_cpu[f'busy/{s}']:.2f} s")
    if "busy_torch_over_ding" in result:
        print(f"  busy machine: torch's default threads take {result['busy_torch_over_ding']:.2f}x ding's default")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _raise_interrupt)  # a kill stops the spinner and the run, as Ctrl-C does
    main()
