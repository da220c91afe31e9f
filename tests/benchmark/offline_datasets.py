"""Offline data sets made here: the project's own trained policies write them through ``collect_demo_data``.

    python tests/benchmark/offline_datasets.py OUT_DIR [--seed 0] [--envs pendulum cartpole hopper]

writes ``pendulum_{expert,medium,mixed}.hdf5`` and ``cartpole_expert.hdf5`` into OUT_DIR (a few minutes on two
cores), and with ``hopper`` in ``--envs`` ``hopper_medium.hdf5`` (MuJoCo's Hopper-v5, the ``mujoco`` extra; 40,000
SAC env steps, from config/mujoco/hopper_sac.py's measured figures roughly 15 minutes of CPU, plus the collection;
see :func:`make_hopper`). Pendulum's behaviour policies are checkpoints of one SAC run
(config/serial/pendulum_sac.py, trained past the stop value): the best one (expert) and the one whose evaluation
lies nearest half-way between random and expert (medium); mixed is medium's and expert's transitions together.
CartPole's expert is the best checkpoint of a DQN run (config/serial/cartpole_dqn.py; it jumps from near-random to
195 in a few evaluations, so there is no CartPole medium policy to take). Each file records ``behaviour_return``,
``random_return`` (a uniformly random policy's mean return) and ``expert_return``, so a return R on it scores ``100
* (R - random) / (expert - random)``.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from typing import Any

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = {"pendulum": 20000, "cartpole": 10000}


def normalised_score(ret: float, meta: dict[str, Any]) -> float:
    """0 = the random policy, 100 = the data's expert."""
    return 100.0 * (ret - float(meta["random_return"])) / (float(meta["expert_return"]) - float(meta["random_return"]))


def _train_behaviour(config: str, work: str, seed: int, stop_value: float, max_env_step: int) -> str:
    """Train ``config`` (checkpoints every 50 iterations) in ``work``; return its run directory."""
    from ding.config import read_config
    from ding.entry import serial_pipeline

    main, create = read_config(os.path.join(REPO, config))
    main.exp_name = os.path.join(work, f"{os.path.basename(config)[:-3]}_behaviour_seed{seed}")
    main.env.stop_value = stop_value
    main.policy.learn.learner = dict(hook=dict(save_ckpt_after_iter=50), checkpoint=dict(keep_last=1000))
    serial_pipeline((main, create), seed=seed, max_env_step=max_env_step)
    return str(main.exp_name)


def _checkpoint_near(run_dir: str, wanted: float) -> tuple[str, float]:
    """The iteration checkpoint whose evaluation (log/eval.csv) is nearest ``wanted``."""
    with open(os.path.join(run_dir, "log", "eval.csv")) as f:
        rows = [(int(r["train_iter"]), float(r["eval_return_mean"])) for r in csv.DictReader(f)]
    have = [(it, ret) for it, ret in rows if os.path.isfile(os.path.join(run_dir, "ckpt", f"iteration_{it}.pth.tar"))]
    it, ret = min(have, key=lambda r: abs(r[1] - wanted))
    return os.path.join(run_dir, "ckpt", f"iteration_{it}.pth.tar"), ret


def make(out_dir: str, seed: int = 0) -> dict[str, str]:
    """Write every data set into ``out_dir`` (kept when already there); return ``{name: path}``."""
    from ding.config import read_config
    from ding.entry import collect_demo_data
    from ding.utils.data import load_hdf5, save_hdf5

    os.makedirs(out_dir, exist_ok=True)
    work = os.path.join(out_dir, "behaviour_runs")
    paths: dict[str, str] = {}
    specs = [("pendulum", "config/serial/pendulum_sac.py", -160.0, 20000),
             ("cartpole", "config/serial/cartpole_dqn.py", 195.0, 30000)]
    for env, config, stop_value, max_env_step in specs:
        kinds = ("expert", "medium", "mixed") if env == "pendulum" else ("expert",)
        wanted = [f"{env}_{k}" for k in kinds]
        if all(os.path.isfile(os.path.join(out_dir, f"{w}.hdf5")) for w in wanted):
            paths.update({w: os.path.join(out_dir, f"{w}.hdf5") for w in wanted})
            continue
        cfg = read_config(os.path.join(REPO, config))
        run_dir = _train_behaviour(config, work, seed, stop_value, max_env_step)
        rand = load_hdf5(collect_demo_data(cfg, seed, SIZES[env], os.path.join(work, f"{env}_random.hdf5"),
                                           random_policy=True, overwrite=True))
        random_return = float(rand.meta["behaviour_return"])
        best = os.path.join(run_dir, "ckpt", "ckpt_best.pth.tar")
        expert_path = os.path.join(out_dir, f"{env}_expert.hdf5")
        collect_demo_data(cfg, seed, SIZES[env], os.path.join(work, f"{env}_expert_raw.hdf5"), state_dict_path=best,
                          overwrite=True)
        expert = load_hdf5(os.path.join(work, f"{env}_expert_raw.hdf5"))
        expert_return = float(expert.meta["behaviour_return"])
        ckpt, _ = _checkpoint_near(run_dir, (random_return + expert_return) / 2)
        collect_demo_data(cfg, seed, SIZES[env], os.path.join(work, f"{env}_medium_raw.hdf5"), state_dict_path=ckpt,
                          overwrite=True)
        medium = load_hdf5(os.path.join(work, f"{env}_medium_raw.hdf5"))
        ref = {"random_return": random_return, "expert_return": expert_return}
        for name, ds in (("expert", expert), ("medium", medium))[:len(kinds)]:
            save_hdf5(os.path.join(out_dir, f"{env}_{name}.hdf5"), _arrays(ds), {**ds.meta, **ref, "kind": name},
                      overwrite=True)
        if env == "pendulum":
            mixed = {k: np.concatenate([v, _arrays(expert)[k]]) for k, v in _arrays(medium).items()}
            save_hdf5(os.path.join(out_dir, f"{env}_mixed.hdf5"), mixed,
                      {**ref, "kind": "mixed", "behaviour_return": (medium.meta["behaviour_return"]
                                                                     + expert_return) / 2}, overwrite=True)
        paths.update({w: os.path.join(out_dir, f"{w}.hdf5") for w in wanted})
        assert os.path.isfile(expert_path)
    return paths


HOPPER_CONFIG = "config/mujoco/hopper_sac.py"


def make_hopper(out_dir: str, seed: int = 0, env_steps: int = 40000, size: int = 100000,
                random_collect: int | None = None, eval_every: int | None = None) -> str:
    """``hopper_medium.hdf5`` in ``out_dir`` (kept when already there): ``size`` transitions of a half-trained SAC.

    SAC (config/mujoco/hopper_sac.py, checkpoints at every evaluation) trains for ``env_steps`` env steps; the
    medium policy is its checkpoint evaluated nearest half-way between a uniformly random policy and the run's best
    evaluation, which is the data's ``expert_return`` (the normalised score's 100). ``random_collect`` and
    ``eval_every`` (train iterations) override the config's random warm-up steps and evaluation period (the tiny
    variant of the test suite). Made here, nothing downloaded."""
    from ding.config import read_config
    from ding.entry import collect_demo_data
    from ding.utils.data import load_hdf5, save_hdf5

    path = os.path.join(out_dir, "hopper_medium.hdf5")
    if os.path.isfile(path):
        return path
    os.makedirs(out_dir, exist_ok=True)
    work = os.path.join(out_dir, "behaviour_runs")
    main, create = read_config(os.path.join(REPO, HOPPER_CONFIG))
    main.exp_name = os.path.join(work, f"hopper_sac_behaviour_seed{seed}")
    main.env.stop_value = float("inf")  # a fixed budget: the medium checkpoint lies somewhere on the way
    if random_collect is not None:
        main.policy.random_collect_size = random_collect
    if eval_every is not None:
        main.policy.eval.evaluator.eval_freq = eval_every
    every = int(main.policy.eval.evaluator.eval_freq)
    main.policy.learn.learner = dict(hook=dict(save_ckpt_after_iter=every), checkpoint=dict(keep_last=1000))
    from ding.entry import serial_pipeline

    serial_pipeline((main, create), seed=seed, max_env_step=env_steps)
    run_dir = str(main.exp_name)
    cfg = read_config(os.path.join(REPO, HOPPER_CONFIG))
    rand = load_hdf5(collect_demo_data(cfg, seed, min(size, 10000), os.path.join(work, "hopper_random.hdf5"),
                                       random_policy=True, overwrite=True))
    random_return = float(rand.meta["behaviour_return"])
    with open(os.path.join(run_dir, "log", "eval.csv")) as f:
        expert_return = max(float(r["eval_return_mean"]) for r in csv.DictReader(f))
    ckpt, _ = _checkpoint_near(run_dir, (random_return + expert_return) / 2)
    raw = os.path.join(work, "hopper_medium_raw.hdf5")
    collect_demo_data(cfg, seed, size, raw, state_dict_path=ckpt, overwrite=True)
    medium = load_hdf5(raw)
    save_hdf5(path, _arrays(medium), {**medium.meta, "random_return": random_return, "expert_return": expert_return,
                                      "kind": "medium", "behaviour_env_steps": env_steps}, overwrite=True)
    return path


def _arrays(ds: Any) -> dict[str, np.ndarray]:
    out = {k: getattr(ds, k) for k in ("obs", "action", "reward", "done", "next_obs")}
    if ds.timeout is not None:
        out["timeout"] = ds.timeout
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--envs", nargs="+", default=["pendulum", "cartpole"], choices=["pendulum", "cartpole",
                                                                                        "hopper"])
    parser.add_argument("--hopper-env-steps", type=int, default=40000, help="the half-trained SAC's env steps")
    parser.add_argument("--hopper-size", type=int, default=100000, help="transitions in hopper_medium.hdf5")
    args = parser.parse_args()
    sys.path.insert(0, REPO)
    made = make(args.out_dir, args.seed) if {"pendulum", "cartpole"} & set(args.envs) else {}
    if "hopper" in args.envs:
        made["hopper_medium"] = make_hopper(args.out_dir, args.seed, args.hopper_env_steps, args.hopper_size)
    for name, path in made.items():
        from ding.utils.data import load_hdf5

        meta = load_hdf5(path).meta
        print(f"{name:18s} {path}  behaviour {meta['behaviour_return']:.1f}  random {meta['random_return']:.1f}  "
              f"expert {meta['expert_return']:.1f}")
