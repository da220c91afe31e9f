"""Wall time per 1,000 offline training iterations, ding next to DI-engine 0.5.3, on the same data set and DI-engine's
own ``pendulum_cql_config.py`` (``data_path`` set; ``cuda`` off and evaluation only at the start, in both).

    python tests/benchmark/bench_offline_speed.py DATA.hdf5 --peer-python /tmp/die-venv/bin/python --seeds 0 1 2

Each framework runs in its own process and pipeline (``serial_pipeline_offline``), twice per seed: a short and a
long run; the time per 1,000 iterations is the difference of their wall times over the difference of their
iteration counts, so set-up and the one evaluation cancel. DI-engine checks its iteration limit only at the end of an
epoch, so its counts are whole epochs. ding and DI-engine alternate run by run; medians over seeds.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _peer_runs import ROOT, find_peer_python, run_worker  # noqa: E402

CONFIG = "dizoo/classic_control/pendulum/config/pendulum_cql_config.py"


def worker(framework: str, data: str, seed: int, iters: int, config_path: str) -> None:
    """One run of ``framework``'s own pipeline; prints ``{"wall_s", "train_iter"}``."""
    import torch

    torch.set_num_threads(1)
    # this repository's ding, or (DI-engine's venv, the repository off the path) DI-engine's own loader and pipeline
    from ding.config import read_config
    from ding.entry import serial_pipeline_offline

    main, create = read_config(config_path)
    main.policy.cuda = False
    main.policy.collect.data_path = data
    main.policy.eval.evaluator.eval_freq = 10 ** 9
    main.exp_name = f"{framework}_cql_seed{seed}_{iters}"
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        serial_pipeline_offline((main, create), seed=seed, max_train_iter=iters)
    except UnboundLocalError:  # DI-engine 0.5.3 prints its last evaluation's reward after training, and raises
        if framework != "di-engine":  # when none ran (its first evaluation is due at iteration 0, never checked)
            raise
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    done = iters
    if framework == "di-engine":
        import h5py

        with h5py.File(data) as f:
            n = len(f["obs"])
        per_epoch = math.ceil(n / int(main.policy.learn.batch_size))
        done = math.ceil(iters / per_epoch) * per_epoch
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "train_iter": done}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--short", type=int, default=200)
    parser.add_argument("--long", type=int, default=1200)
    parser.add_argument("--peer-python", default=None)
    parser.add_argument("--frameworks", nargs="+", default=["ding", "di-engine"])
    parser.add_argument("--worker", default=None)
    parser.add_argument("--iters", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config-path", default=None)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.seed, args.iters, args.config_path)
        return
    sys.path.insert(0, ROOT)
    from tests.di_engine_files import copy_di_engine_file

    work = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(args.data)), "speed_runs"))
    os.makedirs(work, exist_ok=True)
    config_path = copy_di_engine_file(CONFIG, work)
    pythons = {"ding": sys.executable}
    if "di-engine" in args.frameworks:
        peer, note = find_peer_python(args.peer_python, ["ding.entry.serial_entry_offline", "h5py"])
        if peer is None or peer == sys.executable:
            raise SystemExit(f"DI-engine: {note or 'give its venv with --peer-python'}")
        pythons["di-engine"] = peer
    per_1k: dict[str, list[float]] = {f: [] for f in args.frameworks}
    cpu_1k: dict[str, list[float]] = {f: [] for f in args.frameworks}
    for seed in args.seeds:
        for fw in args.frameworks:  # alternating, run by run
            runs = [run_worker(__file__, fw, pythons[fw], [os.path.abspath(args.data), "--iters", str(n), "--seed",
                                                           str(seed), "--config-path", config_path], timeout=3600,
                               repo_on_path=fw == "ding")
                    for n in (args.short, args.long)]
            n = runs[1]["train_iter"] - runs[0]["train_iter"]
            per_1k[fw].append(1000.0 * (runs[1]["wall_s"] - runs[0]["wall_s"]) / n)
            cpu_1k[fw].append(1000.0 * (runs[1]["cpu_s"] - runs[0]["cpu_s"]) / n)
            print(f"seed {seed} {fw:10s} {per_1k[fw][-1]:.2f} s wall, {cpu_1k[fw][-1]:.2f} s CPU per 1,000 "
                  "iterations", flush=True)
    for what, table in (("wall", per_1k), ("CPU", cpu_1k)):
        med = {fw: statistics.median(v) for fw, v in table.items()}
        for fw, v in med.items():
            print(f"{fw:10s} median {v:.2f} s {what} per 1,000 iterations ({', '.join(f'{x:.2f}' for x in table[fw])})")
        if len(med) == 2:
            print(f"ding / DI-engine ({what}): {med['ding'] / med['di-engine']:.2f}x")


if __name__ == "__main__":
    main()
