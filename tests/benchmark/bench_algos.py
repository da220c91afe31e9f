"""Shipped configs to their stop values: env steps and wall time over seeds, against config/README.md's budgets.

    python tests/benchmark/bench_algos.py                               # every config in config/README.md, seeds 0-2
    python tests/benchmark/bench_algos.py cartpole_ppo pendulum_ppo --seeds 0 1 2 3 4
    python tests/benchmark/bench_algos.py path/to/cartpole_ppo_config.py --budget 100000   # any config file
    python tests/benchmark/bench_algos.py --smoke                       # 2 iterations of cartpole_ppo (test suite)

Each run is a whole ``ding`` process (``-m serial`` or ``-m serial_onpolicy``, chosen by the policy) in a fresh
directory, limited to the config's promised env-step budget. Reported per run: env steps and training wall time to
the stop value (the run's ``result``: ``wall_time_s`` counts training, not imports and set-up), process wall time,
final eval return, and whether the stop value was reached within the budget. A table goes to stdout, one JSON line
per result after it, and a PNG of eval return over env steps (one panel per config) to ``--out``.

Peers: for ``cartpole_ppo``, where Stable-Baselines3 is importable, its PPO runs on the same env (CartPole, 200-step
episodes) with the RL-Zoo hyperparameters for CartPole, evaluated the same way (5 deterministic episodes every 512
env steps, stop at 195), timed the same way (training wall, process wall). Tianshou gets a column when importable.
Peers are never project dependencies; an absent peer's column is skipped with a note.
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_DIR = os.path.join(ROOT, "config", "serial")
README = os.path.join(ROOT, "config", "README.md")


def read_budgets(path: str = README) -> dict[str, dict]:
    """``{config name: {'algorithm', 'env', 'stop_value', 'budget'}}`` from the table in config/README.md."""
    rows: dict[str, dict] = {}
    in_table = False
    with open(path) as f:
        for line in f:
            # the first table only: later tables (DI-engine's Atari files, league configs) hold other columns/modes
            if line.startswith("|"):
                in_table = True
            elif in_table or line.startswith("## "):
                break
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 5 or not cells[0].startswith("`"):
                continue
            name = os.path.splitext(os.path.basename(cells[0].strip("`")))[0]
            budget = int(re.sub(r"[^\d]", "", cells[4]))
            rows[name] = {"algorithm": cells[1], "env": cells[2], "stop_value": float(cells[3]), "budget": budget}
    return rows


def pipeline_mode(config_path: str) -> str:
    """``serial_onpolicy`` for an on-policy policy (PPO, A2C), else ``serial``."""
    from ding.config import read_config
    from ding.policy import get_policy_cls

    main, create = read_config(config_path)
    policy_cfg = dict(create.get("policy") or {})
    policy_cfg.setdefault("type", main.policy.get("type"))
    on_policy = main.policy.get("on_policy", get_policy_cls(policy_cfg).default_config().get("on_policy", False))
    return "serial_onpolicy" if on_policy else "serial"


def resolve(arg: str) -> tuple[str, str]:
    """``(label, config path)`` of a shipped config name or of a config file (e.g. one of DI-engine's)."""
    if arg.endswith(".py") and os.path.exists(arg):
        return "file:" + os.path.splitext(os.path.basename(arg))[0], os.path.abspath(arg)
    return arg, os.path.join(CONFIG_DIR, arg + ".py")


def run_ding(name: str, seed: int, budget: int, extra: list[str] | None = None, config: str | None = None,
             env: dict[str, str] | None = None, timeout: float = 3600) -> dict:
    """One whole ``ding`` process; its result file and eval curves (``curve``: (env step, return); ``wall_curve``:
    (env step, training wall s at that evaluation, return)). ``env``: extra environment variables."""
    config = config or os.path.join(CONFIG_DIR, name + ".py")
    mode = pipeline_mode(config)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "ding.entry.cli", "-m", mode, "-c", config, "-s", str(seed), "--exp-name",
               "run", "--env-step", str(budget)] + (extra or [])
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})),
                              capture_output=True, text=True, timeout=timeout)
        process_wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{name} seed {seed} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        with open(os.path.join(tmp, "run", "result")) as f:
            result = json.load(f)
        with open(os.path.join(tmp, "run", "log", "eval.csv")) as f:
            rows = list(csv.DictReader(f))
        curve = [(int(float(r["env_step"])), float(r["eval_return_mean"])) for r in rows]
        wall_curve = [(int(float(r["env_step"])), float(r["wall_time"]), float(r["eval_return_mean"])) for r in rows]
    return {"bench": "algo", "config": name, "impl": "ding", "seed": seed, "stop_flag": bool(result["stop_flag"]),
            "env_step": result["env_step"], "train_wall_s": result["wall_time_s"],
            "process_wall_s": round(process_wall, 2), "eval_return": result["eval_return"], "budget": budget,
            "within_budget": bool(result["stop_flag"]) and result["env_step"] <= budget,
            "stop_value": result["stop_value"], "curve": curve, "wall_curve": wall_curve}


# ------------------------------------------------------------------ peers
_SB3_PPO_CARTPOLE = r"""
import json, sys, time
t_process = time.perf_counter()
import torch
torch.set_num_threads(1)
import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

seed, budget = int(sys.argv[1]), int(sys.argv[2])
make = lambda: gym.make("CartPole-v1", max_episode_steps=200)
curve = []

class EvalStop(BaseCallback):
    # 5 deterministic episodes every 512 env steps (and at the start); stop at a mean of 195
    def __init__(self):
        super().__init__()
        self.eval_env, self.next_eval = make(), 0
    def _on_training_start(self):
        self._eval()
    def _eval(self):
        mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=5, deterministic=True)
        curve.append((int(self.num_timesteps), float(mean)))
        self.next_eval = self.num_timesteps + 512
        return mean < 195
    def _on_step(self):
        return self._eval() if self.num_timesteps >= self.next_eval else True

t0 = time.perf_counter()
env = make_vec_env(make, n_envs=8, seed=seed)
lin = lambda v: (lambda progress: progress * v)
model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
            learning_rate=lin(0.001), clip_range=lin(0.2), seed=seed, verbose=0, device="cpu")
model.learn(total_timesteps=budget, callback=EvalStop())
wall = time.perf_counter() - t0
print(json.dumps({"env_step": int(model.num_timesteps), "train_wall_s": round(wall, 3), "curve": curve,
                  "eval_return": curve[-1][1], "stop_flag": curve[-1][1] >= 195}))
"""

PEERS = {"cartpole_ppo": {"sb3": ("stable_baselines3", _SB3_PPO_CARTPOLE)}}


def run_peer(name: str, peer: str, seed: int, budget: int) -> dict:
    module, script = PEERS[name][peer]
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script, str(seed), str(budget)], capture_output=True, text=True,
                          timeout=3600, env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
    process_wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"peer {peer} on {name} seed {seed} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"bench": "algo", "config": name, "impl": peer, "seed": seed, "stop_flag": out["stop_flag"],
            "env_step": out["env_step"], "train_wall_s": out["train_wall_s"], "process_wall_s": round(process_wall, 2),
            "eval_return": out["eval_return"], "budget": budget,
            "within_budget": out["stop_flag"] and out["env_step"] <= budget, "stop_value": 195, "curve": out["curve"]}


def peers_available(name: str) -> tuple[list[str], list[str]]:
    """``(peers to run, notes on the ones skipped)``."""
    run, notes = [], []
    for peer, (module, _) in PEERS.get(name, {}).items():
        if importlib.util.find_spec(module) is None:
            notes.append(f"{name}: peer {peer} skipped ({module} is not importable here)")
        else:
            run.append(peer)
    if name in PEERS and importlib.util.find_spec("tianshou") is None:
        notes.append(f"{name}: peer tianshou skipped (tianshou is not importable here)")
    return run, notes


# ------------------------------------------------------------------ report
def summarize(results: list[dict]) -> list[dict]:
    rows = []
    for key in dict.fromkeys((r["config"], r["impl"]) for r in results):
        runs = [r for r in results if (r["config"], r["impl"]) == key]
        rows.append({
            "bench": "algo_summary", "config": key[0], "impl": key[1], "seeds": [r["seed"] for r in runs],
            "median_env_step": statistics.median(r["env_step"] for r in runs),
            "median_train_wall_s": round(statistics.median(r["train_wall_s"] for r in runs), 2),
            "median_process_wall_s": round(statistics.median(r["process_wall_s"] for r in runs), 2),
            "within_budget": f"{sum(r['within_budget'] for r in runs)}/{len(runs)}", "budget": runs[0]["budget"],
        })
    return rows


def print_table(results: list[dict], summary: list[dict], notes: list[str]) -> None:
    head = (f"{'config':<24} {'impl':<5} {'seed':>4} {'env steps':>10} {'train s':>8} {'process s':>9} "
            f"{'final return':>12} {'budget':>8}  within")
    print(head)
    for r in results:
        ret = "-" if r["eval_return"] is None else f"{r['eval_return']:.1f}"
        print(f"{r['config']:<24} {r['impl']:<5} {r['seed']:>4} {r['env_step']:>10,} {r['train_wall_s']:>8.2f} "
              f"{r['process_wall_s']:>9.2f} {ret:>12} {r['budget']:>8,}  {'yes' if r['within_budget'] else 'NO'}")
    print()
    print(f"{'config':<24} {'impl':<5} {'median env steps':>16} {'median train s':>14} {'median process s':>16}  "
          "within budget")
    for s in summary:
        print(f"{s['config']:<24} {s['impl']:<5} {s['median_env_step']:>16,.0f} {s['median_train_wall_s']:>14.2f} "
              f"{s['median_process_wall_s']:>16.2f}  {s['within_budget']}")
    for note in notes:
        print(f"note: {note}")


def plot(results: list[dict], path: str) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    configs = list(dict.fromkeys(r["config"] for r in results))
    fig, axes = plt.subplots(1, len(configs), figsize=(5 * len(configs), 3.6), squeeze=False)
    for ax, name in zip(axes[0], configs):
        for r in (r for r in results if r["config"] == name):
            xs, ys = zip(*r["curve"]) if r["curve"] else ((), ())
            ax.plot(xs, ys, label=f"{r['impl']} seed {r['seed']}", alpha=0.8,
                    linestyle="-" if r["impl"] == "ding" else "--")
        stop = next((r for r in results if r["config"] == name), None)
        ax.set_title(name)
        ax.set_xlabel("env steps")
        ax.set_ylabel("eval return")
        if stop is not None:
            ax.axvline(stop["budget"], color="grey", linewidth=0.8, linestyle=":")  # the env-step budget
            if stop.get("stop_value") is not None:
                ax.axhline(stop["stop_value"], color="grey", linewidth=0.8, linestyle="--")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", help="config names (config/serial/<name>.py) or config file paths; "
                        "default: every config in config/README.md")
    parser.add_argument("--budget", type=int, default=100_000,
                        help="env-step limit of a config config/README.md does not list (e.g. a DI-engine file)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--smoke", action="store_true", help="2 training iterations of one seed (the test suite)")
    parser.add_argument("--no-peers", action="store_true", help="skip Stable-Baselines3 / Tianshou")
    parser.add_argument("--out", default="bench_algos.png", help="PNG of the eval curves")
    args = parser.parse_args(argv)

    budgets = read_budgets()
    names = args.configs or (["cartpole_ppo"] if args.smoke else list(budgets))
    unknown = [n for n in names if not os.path.exists(resolve(n)[1])]
    if unknown:
        parser.error(f"unknown config(s) {unknown}; shipped: "
                     f"{sorted(os.path.splitext(f)[0] for f in os.listdir(CONFIG_DIR))}")
    seeds = args.seeds[:1] if args.smoke else args.seeds
    results: list[dict] = []
    notes = ["--smoke: 2 training iterations, peers skipped"] if args.smoke else []
    for arg in names:
        name, config = resolve(arg)
        budget = budgets.get(name, {}).get("budget", args.budget)
        extra = ["--train-iter", "2"] if args.smoke else []
        peers, peer_notes = ([], []) if (args.smoke or args.no_peers) else peers_available(name)
        notes += peer_notes
        for seed in seeds:  # ding and its peers interleaved, so machine noise hits them alike
            results.append(run_ding(name, seed, budget, extra, config))
            for peer in peers:
                results.append(run_peer(name, peer, seed, budget))
    summary = summarize(results)
    print_table(results, summary, notes)
    png = plot(results, args.out)
    if png:
        print(f"plot: {png}")
    for r in results + summary:
        print(json.dumps({k: v for k, v in r.items() if k not in ("curve", "wall_curve")}))
    return results + summary


if __name__ == "__main__":
    main()
