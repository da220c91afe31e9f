"""Serial CartPole DQN: process wall time and env steps to eval >= 195, plus collector throughput vs its ceiling.

    python tests/benchmark/bench_serial_dqn.py            # 3 seeds + collector ratio (medians of 5)
    python tests/benchmark/bench_serial_dqn.py --smoke    # tiny run, used by the test suite
    python tests/benchmark/bench_serial_dqn.py --no-collector --baseline ../old-checkout --repeats 3
        # this checkout's training runs next to another checkout's (e.g. `git worktree add ../old-checkout HEAD~3`),
        # interleaved, same seeds: median wall of each and the ratio

The training runs are whole processes (`ding -m serial -c config/serial/cartpole_dqn.py -s K`), timed from start to
exit, so import time and set-up count. The collector figure is a ratio to a plain gymnasium ``SyncVectorEnv(8)`` loop
with the same Q-network forward + argmax per step (the "collector ceiling"), measured in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")


def train_once(seed: int, extra: list[str] | None = None, checkout: str | None = None) -> dict:
    """One training process; ``checkout`` runs another checkout's ``ding`` package (first on PYTHONPATH)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "ding.entry.cli", "-m", "serial", "-c", CONFIG, "-s", str(seed)] + (extra or [])
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if checkout:
            env["PYTHONPATH"] = os.path.abspath(checkout) + os.pathsep + env.get("PYTHONPATH", "")
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"training run failed (seed {seed}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        with open(os.path.join(tmp, f"cartpole_dqn_seed{seed}", "result")) as f:
            result = json.load(f)
    return {"seed": seed, "wall_s": wall, "env_step": result["env_step"], "train_iter": result["train_iter"],
            "eval_return": result["eval_return"], "stop_flag": result["stop_flag"]}


def _q_network():
    from ding.model import DQN

    return DQN(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True).eval()


def ceiling_steps_per_s(n_steps: int, env_num: int = 8, count_autoreset: bool = False) -> float:
    """gymnasium SyncVectorEnv + Q-network forward + argmax per vector step.

    gymnasium 1.x vector envs reset a finished env on the NEXT ``step`` call (reward 0, no dynamics). Those calls are
    not transitions, so by default they are not counted as env steps (ding's collector counts transitions only);
    ``count_autoreset=True`` gives the raw figure (every env slot of every call).
    """
    import gymnasium as gym
    import numpy as np
    import torch

    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=200)] * env_num)
    model = _q_network()
    obs, _ = envs.reset(seed=0)
    dones = []
    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(n_steps // env_num):
            q = model(torch.from_numpy(obs.astype(np.float32)))["logit"]
            obs, _, term, trunc, _ = envs.step(q.argmax(-1).numpy())
            dones.append(term | trunc)
    dt = time.perf_counter() - t0
    envs.close()
    calls = n_steps // env_num
    if count_autoreset:
        return calls * env_num / dt
    autoresets = int(np.sum(dones[:-1]))  # a done at call k makes call k+1 a reset for that env
    return (calls * env_num - autoresets) / dt


def collector_steps_per_s(n_steps: int, env_num: int = 8, manager: str = "base") -> float:
    """ding SampleSerialCollector with dizoo CartPole envs and DQN collect mode (eps-greedy, eps=0.1)."""
    from functools import partial

    from ding.config import compile_config
    from ding.envs import create_env_manager, get_vec_env_setting
    from ding.policy import create_policy
    from ding.worker import create_serial_collector
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main = json.loads(json.dumps(main_config))
    main["env"]["collector_env_num"] = env_num
    main["env"]["manager"] = {"type": manager}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            cfg = compile_config(main, auto=True, create_cfg=json.loads(json.dumps(create_config)), save_cfg=False)
            cfg.env.manager.type = manager
            env_fn, collector_cfgs, _ = get_vec_env_setting(cfg.env, eval_=False)
            env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_cfgs])
            env.seed(0)
            policy = create_policy(cfg.policy, enable_field=["collect"])
            collector = create_serial_collector(cfg.policy.collect.collector, env=env, policy=policy.collect_mode,
                                               exp_name=cfg.exp_name)
            try:
                collector.collect(n_sample=256, policy_kwargs={"eps": 0.1})  # warm-up
                start = collector.envstep
                t0 = time.perf_counter()
                collector.collect(n_sample=n_steps, policy_kwargs={"eps": 0.1})
                dt = time.perf_counter() - t0
                return (collector.envstep - start) / dt
            finally:
                collector.close()
        finally:
            os.chdir(cwd)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (used by the test suite)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-train", action="store_true", help="only the collector throughput")
    parser.add_argument("--no-collector", action="store_true", help="only the training runs")
    parser.add_argument("--baseline", metavar="CHECKOUT",
                        help="another checkout of this repository to time next to this one (training runs)")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    results: list[dict] = []
    n_steps, repeats = (2_000, 1) if args.smoke else (40_000, args.repeats)
    ceiling, raw, ours = [], [], []
    for _ in range(0 if args.no_collector else repeats):  # interleaved so machine noise hits all alike
        ceiling.append(ceiling_steps_per_s(n_steps))
        raw.append(ceiling_steps_per_s(n_steps, count_autoreset=True))
        ours.append(collector_steps_per_s(n_steps))
    if ours:
        c, r, o = statistics.median(ceiling), statistics.median(raw), statistics.median(ours)
        results.append({"bench": "collector", "envs": 8, "ding_steps_per_s": round(o), "ceiling_steps_per_s": round(c),
                        "ratio": round(o / c, 3), "ceiling_raw_steps_per_s": round(r), "ratio_to_raw": round(o / r, 3),
                        "repeats": repeats})

    if args.baseline and not args.no_train:
        seeds = list(range(args.seeds))
        this, base = [], []
        for _ in range(args.repeats):  # interleaved: this, baseline, this, ...
            for seed in seeds:
                this.append(train_once(seed))
                base.append(train_once(seed, checkout=args.baseline))
        tw, bw = statistics.median(r["wall_s"] for r in this), statistics.median(r["wall_s"] for r in base)
        results.append({"bench": "serial_dqn_vs_baseline", "baseline": args.baseline, "seeds": seeds,
                        "repeats": args.repeats, "median_wall_s": round(tw, 2), "baseline_median_wall_s": round(bw, 2),
                        "ratio": round(tw / bw, 3),
                        "same_env_steps": [r["env_step"] for r in this] == [r["env_step"] for r in base],
                        "env_steps": sorted({r["env_step"] for r in this})})
    elif not args.no_train:
        seeds = [0] if args.smoke else list(range(args.seeds))
        extra = ["--env-step", "300"] if args.smoke else []
        runs = [train_once(s, extra) for s in seeds]
        results.append({"bench": "serial_dqn_cartpole", "seeds": seeds,
                        "median_wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
                        "median_env_step": statistics.median(r["env_step"] for r in runs),
                        "all_reached_195": all(r["stop_flag"] for r in runs), "runs": runs})

    print(f"{'benchmark':<22} {'figure':<52}")
    for r in results:
        if r["bench"] == "serial_dqn_vs_baseline":
            print(f"{'serial DQN CartPole':<22} median wall {r['median_wall_s']} s vs baseline "
                  f"{r['baseline_median_wall_s']} s = {r['ratio']:.2f}x; same env steps per seed: "
                  f"{r['same_env_steps']}")
        elif r["bench"] == "collector":
            print(f"{'collector (8 envs)':<22} {r['ding_steps_per_s']:,} vs ceiling {r['ceiling_steps_per_s']:,} "
                  f"env steps/s = {r['ratio']:.2f}x (raw ceiling incl. autoreset calls "
                  f"{r['ceiling_raw_steps_per_s']:,}: {r['ratio_to_raw']:.2f}x)")
        else:
            print(f"{'serial DQN CartPole':<22} median wall {r['median_wall_s']} s, median env steps "
                  f"{r['median_env_step']}, all reached 195: {r['all_reached_195']}")
    for r in results:
        print(json.dumps(r))
    return results


if __name__ == "__main__":
    main()
