"""Pendulum SAC: training wall time and env steps to eval >= -250, ding next to Stable-Baselines3 and Tianshou.

    python tests/benchmark/bench_pendulum_sac.py                       # seeds 0 1 2, peers if importable
    python tests/benchmark/bench_pendulum_sac.py --peer-python /path/to/venv/bin/python --seeds 0 1 2 3 4
    python tests/benchmark/bench_pendulum_sac.py --smoke               # tiny run, used by the test suite

Every run is its own process with one torch thread (``torch.set_num_threads(1)``), and every framework stops when
the mean return of 5 deterministic evaluation episodes reaches -250 (Pendulum-v1, 200-step episodes). The clock
starts before the envs and networks are built and stops when training returns, so set-up, warm-up, evaluations
and ding's end-of-run checkpoint all count; imports do not. Runs are interleaved (ding, SB3, Tianshou for seed 0,
then seed 1, ...) so load on the machine hits all of them alike; the figure to read is the ratio of medians.

- ding: the shipped config ``config/serial/pendulum_sac.py`` through ``serial_pipeline``.
- Stable-Baselines3: rl-zoo's Pendulum-v1 SAC hyperparameters (learning rate 1e-3, the rest SB3's defaults: 256x256
  networks, batch 256, learning_starts 100, one gradient step per env step), evaluated every 250 env steps on 5
  envs (``EvalCallback`` + ``StopTrainingOnRewardThreshold``).
- Tianshou 2.x: its own Pendulum SAC test hyperparameters (128x128, batch 128, 10 envs, 10 steps per collect, 0.1
  gradient steps per env step, 3-step returns), tested every 1,000 env steps on 5 episodes.

The peers are never project dependencies: install them in a separate venv (``pip install stable-baselines3
tianshou``) and pass its interpreter with ``--peer-python`` (or ``DING_BENCH_PEER_PYTHON``); without one the peer
columns are skipped with a note. Prints a table and one JSON line per run and per summary.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _peer_runs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "serial", "pendulum_sac.py")
STOP_VALUE = -250.0
EVAL_EPISODES = 5
FRAMEWORKS = ("ding", "sb3", "tianshou")
PEER_MODULES = {"sb3": "stable_baselines3", "tianshou": "tianshou"}


# ---------------------------------------------------------------------------------------------------- workers
# Each runs in its own process (``--worker NAME``) and prints one JSON line; only ding's imports ding.

def worker_ding(seed: int, max_env_step: int | None) -> dict:
    from ding.config import read_config
    from ding.entry import serial_pipeline

    main, create = read_config(CONFIG)
    main.exp_name = f"bench_ding_seed{seed}"
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**9))
    t0 = time.perf_counter()
    serial_pipeline((main, create), seed=seed, max_env_step=max_env_step)
    wall = time.perf_counter() - t0
    with open(os.path.join(main.exp_name, "result")) as f:
        result = json.load(f)
    return {"wall_s": wall, "env_step": result["env_step"], "updates": result["train_iter"],
            "reached": bool(result["stop_flag"]), "eval_return": result["eval_return"]}


def worker_sb3(seed: int, max_env_step: int | None) -> dict:
    import gymnasium as gym
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
    from stable_baselines3.common.env_util import make_vec_env

    t0 = time.perf_counter()
    env = gym.make("Pendulum-v1")
    eval_env = make_vec_env("Pendulum-v1", n_envs=EVAL_EPISODES, seed=10_000 + seed)
    stop = StopTrainingOnRewardThreshold(reward_threshold=STOP_VALUE, verbose=0)
    callback = EvalCallback(eval_env, callback_on_new_best=stop, n_eval_episodes=EVAL_EPISODES, eval_freq=250,
                            deterministic=True, verbose=0)
    model = SAC("MlpPolicy", env, learning_rate=1e-3, seed=seed, verbose=0, device="cpu")
    model.learn(total_timesteps=max_env_step or 20_000, callback=callback)
    wall = time.perf_counter() - t0
    best = float(callback.best_mean_reward)
    return {"wall_s": wall, "env_step": int(model.num_timesteps), "updates": int(model._n_updates),
            "reached": best >= STOP_VALUE, "eval_return": best}


def worker_tianshou(seed: int, max_env_step: int | None) -> dict:
    import gymnasium as gym
    import numpy as np
    import torch
    from tianshou.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

    t0 = time.perf_counter()
    np.random.seed(seed)
    torch.manual_seed(seed)
    env = gym.make("Pendulum-v1")
    train_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(10)])
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(EVAL_EPISODES)])
    train_envs.seed(seed)
    test_envs.seed(10_000 + seed)
    obs_shape, act_shape, hidden = env.observation_space.shape, env.action_space.shape, [128, 128]
    actor = ContinuousActorProbabilistic(preprocess_net=Net(state_shape=obs_shape, hidden_sizes=hidden),
                                         action_shape=act_shape, unbounded=True, conditioned_sigma=True)

    def critic() -> ContinuousCritic:
        return ContinuousCritic(preprocess_net=Net(state_shape=obs_shape, action_shape=act_shape,
                                                   hidden_sizes=hidden, concat=True))

    alpha = AutoAlpha(-float(np.prod(act_shape)), 0.0, AdamOptimizerFactory(lr=3e-4))
    algorithm = SAC(policy=SACPolicy(actor=actor, action_space=env.action_space),
                    policy_optim=AdamOptimizerFactory(lr=1e-3), critic=critic(),
                    critic_optim=AdamOptimizerFactory(lr=1e-3), critic2=critic(),
                    critic2_optim=AdamOptimizerFactory(lr=1e-3), tau=0.005, gamma=0.99, alpha=alpha,
                    n_step_return_horizon=3)
    train_collector = Collector(algorithm, train_envs, VectorReplayBuffer(20_000, 10), exploration_noise=True)
    test_collector = Collector(algorithm, test_envs)
    limit = max_env_step or 100_000
    result = algorithm.run_training(OffPolicyTrainerParams(
        training_collector=train_collector, test_collector=test_collector, max_epochs=max(1, limit // 1000),
        epoch_num_steps=min(1000, limit), collection_step_num_env_steps=10, test_step_num_episodes=EVAL_EPISODES,
        batch_size=128, update_step_num_gradient_steps_per_sample=0.1,
        stop_fn=lambda mean_return: mean_return >= STOP_VALUE, verbose=False, show_progress=False))
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "env_step": int(result.train_step), "updates": int(result.update_step),
            "reached": float(result.best_reward) >= STOP_VALUE, "eval_return": float(result.best_reward)}


WORKERS = {"ding": worker_ding, "sb3": worker_sb3, "tianshou": worker_tianshou}


# ---------------------------------------------------------------------------------------------------- driver
def run_worker(framework: str, python: str, seed: int, max_env_step: int | None, timeout: float) -> dict:
    """One training run in a fresh process (one torch thread), in a temporary directory."""
    worker_args = ["--seed", str(seed)] + (["--max-env-step", str(max_env_step)] if max_env_step else [])
    result = _peer_runs.run_worker(__file__, framework, python, worker_args, timeout)
    return {"bench": "pendulum_sac_run", "framework": framework, "seed": seed, **result}


def find_peer_python(given: str | None) -> tuple[str | None, str]:
    """The interpreter that can import the peers: ``given``, ``$DING_BENCH_PEER_PYTHON``, or this one."""
    return _peer_runs.find_peer_python(given, list(PEER_MODULES.values()))


def summarize(runs: list[dict]) -> dict:
    by: dict[str, list[dict]] = {}
    for r in runs:
        by.setdefault(r["framework"], []).append(r)
    summary: dict = {"bench": "pendulum_sac_summary", "stop_value": STOP_VALUE}
    for fw, rs in by.items():
        summary[fw] = {
            "median_wall_s": round(statistics.median(r["wall_s"] for r in rs), 2),
            "median_env_step": statistics.median(r["env_step"] for r in rs),
            "reached": f"{sum(r['reached'] for r in rs)}/{len(rs)}",
        }
    peers = [summary[p]["median_wall_s"] for p in PEER_MODULES if p in summary]
    if "ding" in summary and peers:
        summary["ding_wall_vs_fastest_peer"] = round(summary["ding"]["median_wall_s"] / min(peers), 2)
    return summary


def print_table(runs: list[dict], summary: dict, note: str) -> None:
    print(f"{'framework':<10} {'seed':>4} {'wall s':>8} {'env steps':>10} {'updates':>8} {'eval return':>12} reached")
    for r in runs:
        ret = "-" if r["eval_return"] is None else f"{r['eval_return']:.1f}"
        print(f"{r['framework']:<10} {r['seed']:>4} {r['wall_s']:>8.1f} {r['env_step']:>10,} {r['updates']:>8,} "
              f"{ret:>12} {r['reached']}")
    for fw in FRAMEWORKS:
        if fw in summary:
            s = summary[fw]
            print(f"{fw:<10} median wall {s['median_wall_s']:.1f} s, median env steps {s['median_env_step']:,.0f}, "
                  f"reached {s['reached']}")
    if "ding_wall_vs_fastest_peer" in summary:
        print(f"ding wall / fastest peer's: {summary['ding_wall_vs_fastest_peer']}x (target <= 1.0)")
    if note:
        print(note)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--peer-python", default=None, help="interpreter with stable_baselines3 and tianshou")
    parser.add_argument("--no-peers", action="store_true", help="ding only")
    parser.add_argument("--smoke", action="store_true", help="one seed, 700 env steps: checks the script runs")
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--max-env-step", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        import torch

        torch.set_num_threads(1)
        print(json.dumps(WORKERS[args.worker](args.seed, args.max_env_step)))
        return {}

    seeds = [0] if args.smoke else args.seeds
    max_env_step = 700 if args.smoke else None
    peer_python, note = (None, "peer columns skipped (--no-peers)") if args.no_peers else \
        find_peer_python(args.peer_python)
    runs = []
    for seed in seeds:
        runs.append(run_worker("ding", sys.executable, seed, max_env_step, timeout=900))
        print(json.dumps(runs[-1]), flush=True)
        if peer_python is not None:
            for fw in PEER_MODULES:
                runs.append(run_worker(fw, peer_python, seed, max_env_step, timeout=1800))
                print(json.dumps(runs[-1]), flush=True)
    summary = summarize(runs)
    if note:
        summary["note"] = note
    print_table(runs, summary, note)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
