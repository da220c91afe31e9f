"""Offline RL on the data sets of offline_datasets.py: DI-engine 0.5.3's own config files (only ``data_path`` changed),
plus ding's CQL, IQL and continuous BC configs for the Pendulum medium comparison, through ``serial_pipeline_offline``.

    python tests/benchmark/bench_offline.py DATA_DIR --runs pendulum_cql:expert pendulum_td3_bc:expert \
        --seeds 0 1 2 --iters 10000 [--out results.jsonl]

Each run trains up to ``--iters`` iterations (its config's stop value may end it earlier) and reports its best and
final evaluation as returns and as normalised scores (0 = random policy, 100 = the data's expert). A line of JSON per
run goes to ``--out``; the table goes to stdout.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DI_ENGINE_CONFIGS = {
    "pendulum_cql": "dizoo/classic_control/pendulum/config/pendulum_cql_config.py",
    "pendulum_td3_bc": "dizoo/classic_control/pendulum/config/pendulum_td3_bc_config.py",
    "cartpole_cql": "dizoo/classic_control/cartpole/config/cartpole_cql_config.py",
    "cartpole_bc": "dizoo/classic_control/cartpole/config/cartpole_bc_config.py",
}


def ding_config(name: str, work: str) -> tuple[dict, dict]:
    """A DI-engine file (copied out of its wheel into ``work``), or one of ding's own: pendulum_cql_medium,
    pendulum_td3_bc_medium, pendulum_iql, pendulum_bc."""
    from easydict import EasyDict

    from ding.config import read_config

    if name in DI_ENGINE_CONFIGS:
        return read_config(copy_config(name, work))
    if name == "pendulum_td3_bc_medium":
        # TD3BC for 3,000 iterations on medium data (docs/offline.md): DI-engine's file with a 10x faster target
        # (target_theta 0.05 instead of 0.005, so the critic's values reach the returns' scale within the budget),
        # actor learning rate 1e-3 (instead of 1e-4) and batch 256 (instead of 128); alpha stays the paper's 2.5
        main, create = read_config(copy_config("pendulum_td3_bc", work))
        main.policy.learn.update(batch_size=256, learning_rate_actor=1e-3, target_theta=0.05)
        main.exp_name = "pendulum_td3_bc_medium"
        return main, create
    main, create = read_config(copy_config("pendulum_cql", work))
    main, create = copy.deepcopy(main), copy.deepcopy(create)
    if name == "pendulum_iql":
        main.policy.learn = EasyDict(batch_size=256, learning_rate_q=3e-4, learning_rate_policy=3e-4,
                                     learning_rate_value=3e-4, discount_factor=0.99, target_theta=0.005,
                                     expectile=0.7, beta=3.0)
        main.exp_name, create.policy.type = "pendulum_iql", "iql"
    elif name == "pendulum_cql_medium":
        # CQL for data of a medium policy (docs/offline.md): DI-engine's file with the paper's CQL weight (1 instead
        # of 5) and the actor's and temperature's learning rates of SAC (3e-4 instead of 1e-3), batch 256
        main.policy.learn.update(batch_size=256, min_q_weight=1.0, learning_rate_policy=3e-4,
                                 learning_rate_alpha=3e-4)
        main.exp_name = "pendulum_cql_medium"
    elif name == "pendulum_bc":
        main.policy.model = EasyDict(obs_shape=3, action_shape=1, action_space="regression",
                                     actor_head_hidden_size=128)
        main.policy.learn = EasyDict(batch_size=256, learning_rate=1e-3, optimizer="Adam", weight_decay=None)
        main.policy.continuous, main.policy.loss_type = True, "mse_loss"
        main.policy.collect = EasyDict(data_type="hdf5")
        main.policy.pop("command", None)
        main.exp_name, create.policy.type = "pendulum_bc", "bc"
    elif name in ("hopper_td3_bc", "hopper_iql", "hopper_bc"):
        main, create = ding_config(name.replace("hopper", "pendulum"), work)
        return _on_hopper(main, create)
    else:
        known = [*sorted(DI_ENGINE_CONFIGS), "pendulum_cql_medium", "pendulum_td3_bc_medium", "pendulum_iql",
                 "pendulum_bc", "hopper_td3_bc", "hopper_iql", "hopper_bc"]
        raise SystemExit(f"unknown config {name!r}; use one of {known}")
    create.policy.pop("import_names", None)
    return main, create


def _on_hopper(main: Any, create: Any) -> tuple[Any, Any]:
    """A Pendulum offline config moved onto MuJoCo's Hopper-v5 (the data set of offline_datasets.make_hopper):
    11 observations, 3 actions (Hopper's own [-1, 1]), 256-unit networks, an evaluation every 1,000 iterations, no
    stop value."""
    env = type(main.env)(env_id="Hopper-v5", evaluator_env_num=5, n_evaluator_episode=5, stop_value=1e9)
    if "norm_obs" in main.env:  # TD3BC's offline observation statistics
        env.norm_obs = main.env.norm_obs
    main.env = env
    create.env = type(create.env)(type="mujoco", import_names=["dizoo.mujoco.envs.mujoco_env"])
    model = main.policy.model
    model.obs_shape, model.action_shape = 11, 3
    for key in ("actor_head_hidden_size", "critic_head_hidden_size"):
        if key in model:
            model[key] = 256
    main.policy.eval = type(main.policy)(evaluator=dict(eval_freq=1000))
    main.exp_name = main.exp_name.replace("pendulum", "hopper")
    return main, create


def copy_config(name: str, work: str) -> str:
    sys.path.insert(0, REPO)
    from tests.di_engine_files import copy_di_engine_file

    return copy_di_engine_file(DI_ENGINE_CONFIGS[name], work)


def run_one(name: str, data: str, seed: int, iters: int, work: str) -> dict[str, Any]:
    """Train one config on one data set; return its figures."""
    from ding.engine.training_view import read_eval_csv
    from ding.entry import serial_pipeline_offline
    from ding.utils.data import load_hdf5

    sys.path.insert(0, HERE)
    from offline_datasets import normalised_score

    main, create = ding_config(name, work)
    main.policy.setdefault("collect", {})
    main.policy.collect.data_path = data
    main.exp_name = os.path.join(work, f"{name}_{os.path.basename(data)[:-5]}_seed{seed}")
    t0 = time.perf_counter()
    serial_pipeline_offline((main, create), seed=seed, max_train_iter=iters)
    wall = time.perf_counter() - t0
    rows = read_eval_csv(os.path.join(main.exp_name, "log", "eval.csv"))
    meta = load_hdf5(data).meta
    best = max(float(r["eval_return_mean"]) for r in rows)
    final = float(rows[-1]["eval_return_mean"])
    return {"config": name, "data": os.path.basename(data), "seed": seed, "train_iter": int(rows[-1]["train_iter"]),
            "best_return": best, "final_return": final, "best_score": normalised_score(best, meta),
            "final_score": normalised_score(final, meta), "wall_s": round(wall, 1),
            "stop_value": main.env.get("stop_value")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("--runs", nargs="+", required=True, help="config:data pairs, e.g. pendulum_cql:expert")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--iters", type=int, default=10000)
    parser.add_argument("--work", default=None, help="where the runs go (default: DATA_DIR/runs)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = args.work or os.path.join(args.data_dir, "runs")
    os.makedirs(work, exist_ok=True)
    results = []
    for spec in args.runs:
        name, kind = spec.split(":")
        env = name.split("_")[0]
        for seed in args.seeds:
            r = run_one(name, os.path.join(args.data_dir, f"{env}_{kind}.hdf5"), seed, args.iters, work)
            results.append(r)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(r) + "\n")
    print(f"{'config':18s} {'data':18s} {'seeds':6s} {'best score (min)':>17s} {'final score (median)':>21s} "
          f"{'iters (median)':>15s}")
    for spec in args.runs:
        name, kind = spec.split(":")
        rs = [r for r in results if r["config"] == name and r["data"].endswith(f"_{kind}.hdf5")]
        print(f"{name:18s} {kind:18s} {len(rs):<6d} {min(r['best_score'] for r in rs):17.1f} "
              f"{statistics.median(r['final_score'] for r in rs):21.1f} "
              f"{statistics.median(r['train_iter'] for r in rs):15.0f}")


if __name__ == "__main__":
    main()
