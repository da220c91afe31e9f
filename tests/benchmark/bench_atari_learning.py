"""Atari proof of learning: RoadRunner DQN, ding next to Stable-Baselines3, return vs env steps and vs wall time.

    python tests/benchmark/bench_atari_learning.py --peer-python /path/to/peer/bin/python        # seeds 0 1 2
    python tests/benchmark/bench_atari_learning.py --peer-python ... --seeds 0 --budget 50000 --side-by-side
    python tests/benchmark/bench_atari_learning.py --smoke        # a few hundred env steps (the test suite)

Same game, budget and evaluation protocol for both: ``RoadRunnerNoFrameskip-v4`` with the DeepMind preprocessing
(30 no-op starts, 4-frame skip with max-pooling, 84x84 grayscale, 4-frame stack; episodic life and reward clipping
in training only), a greedy evaluation of ``EVAL_EPISODES`` full games with unclipped scores every ``EVAL_EVERY`` env
steps (and at the start), 108,000 frames at most per game.

- ding: the shipped ``config/serial/roadrunner_dqn.py`` (Nature CNN, double DQN, 3-step returns, batch 32, one
  update every 4 env steps, 4 collector envs, target copy every 2,000 env steps, 2,000 random steps first).
- Stable-Baselines3: ``DQN("CnnPolicy")`` (the same Nature CNN) with the closest settings it has: 4 envs in a
  ``DummyVecEnv`` with its ``AtariWrapper``, ``train_freq=1`` (one update of 32 per vector step = every 4 env
  steps), ``n_steps=3`` where its version has n-step returns, the same learning rate, buffer, epsilon schedule,
  target period and random start. SB3's DQN is not double DQN; that is the one difference.

The clock of each run starts when its envs and networks are built and counts collection, training and the
evaluations (ding: ``log/eval.csv``'s ``wall_time``; SB3: the same, measured in its process); imports do not count.
The figure to read: for a target return (``--target``), each run's wall time to its first evaluation at or above
it, and ding's median over SB3's (issue 21's target: <= 0.8). Runs of a seed go one after the other (ding, then
SB3), or with ``--side-by-side`` at the same time (one torch thread each), so the machine's load hits both alike.
Prints a table and one JSON line per run and per summary; ``--json`` keeps every curve, ``--out`` draws the PNG
(matplotlib from this interpreter or, where it has none, from the peer's).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _bench_loader import load_bench_module  # noqa: E402
from _peer_runs import draw_curves  # noqa: E402

GAME = "RoadRunner"
CONFIG_NAME = "roadrunner_dqn"
BUDGET = 100_000
EVAL_EVERY = 5_000
EVAL_EPISODES = 5
RANDOM_PLAY = 11.5  # RoadRunner's random-play score in the Atari-100k tables (Kaiser et al. 2019)
# Untrained greedy networks already score 0-950 here (a constant action can run into seeds), so the target sits
# well above that. A full-budget run of seed 0 passed it at 23k (ding) and 40k (SB3) env steps (docs/benchmarks.md).
DEFAULT_TARGET = 2_000.0

# The peer's run, executed by the peer interpreter (SB3, gymnasium, ale-py): argv seed budget eval_every threads.
_SB3_DQN = r"""
import json, sys, time
seed, budget, eval_every, threads, game, episodes = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                                     int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
import torch
torch.set_num_threads(threads)
import ale_py
import gymnasium as gym
import numpy as np
from stable_baselines3 import DQN
from stable_baselines3.common.atari_wrappers import AtariWrapper
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecTransposeImage

gym.register_envs(ale_py)
env_id = f"{game}NoFrameskip-v4"

def make(train):
    def thunk():
        env = gym.make(env_id, max_num_frames_per_episode=108_000)
        return AtariWrapper(env, terminal_on_life_loss=train, clip_reward=train)
    return thunk

def vec(train, n, s):
    v = DummyVecEnv([make(train) for _ in range(n)])
    v.seed(s)
    return VecTransposeImage(VecFrameStack(v, n_stack=4))

curve, eval_s = [], [0.0]

class Evaluate(BaseCallback):
    # greedy, `episodes` full games with unclipped scores, every `eval_every` env steps and at the start
    def __init__(self):
        super().__init__()
        self.next_eval = 0
    def _on_training_start(self):
        self._eval()
    def _eval(self):
        env = vec(False, episodes, 10_000 + seed + len(curve) * 100)
        obs, returns, done = env.reset(), np.zeros(episodes), np.zeros(episodes, bool)
        while not done.all():
            action, _ = self.model.predict(obs, deterministic=True)
            obs, reward, dones, _ = env.step(action)
            returns += np.where(done, 0.0, reward)
            done |= dones
        env.close()
        curve.append((int(self.num_timesteps), round(time.perf_counter() - t0, 3), float(returns.mean())))
        print(json.dumps({"eval": curve[-1]}), flush=True)  # progress: what a stopped run still shows
        self.next_eval = self.num_timesteps + eval_every
    def _on_step(self):
        if self.num_timesteps >= self.next_eval:
            self._eval()
        return True

t0 = time.perf_counter()
env = vec(True, 4, seed)
kwargs = dict(buffer_size=100_000, learning_starts=2_000, batch_size=32, learning_rate=1e-4, gamma=0.99,
              train_freq=1, gradient_steps=1, target_update_interval=2_000, exploration_initial_eps=1.0,
              exploration_final_eps=0.01, exploration_fraction=min(1.0, 20_000 / budget))
import inspect
nstep = "n_steps" in inspect.signature(DQN.__init__).parameters
if nstep:
    kwargs["n_steps"] = 3
model = DQN("CnnPolicy", env, seed=seed, verbose=0, device="cpu", **kwargs)
callback = Evaluate()
model.learn(total_timesteps=budget, callback=callback)
if curve[-1][0] < model.num_timesteps:  # the budget's last steps: one more evaluation, as ding's loop ends
    callback.num_timesteps = model.num_timesteps
    callback._eval()
wall = time.perf_counter() - t0
import stable_baselines3
print(json.dumps({"env_step": int(model.num_timesteps), "train_wall_s": round(wall, 3), "wall_curve": curve,
                  "eval_return": curve[-1][2], "updates": int(model._n_updates), "nstep": 3 if nstep else 1,
                  "version": stable_baselines3.__version__}))
"""


# ------------------------------------------------------------------ runs
# --smoke: the shipped config, cut to seconds (one env, 64 random steps, one 100-step evaluation game)
_SMOKE_CONFIG = """
from dizoo.atari.config.serial.roadrunner.roadrunner_dqn_config import create_config, main_config
main_config.policy.random_collect_size = 64
main_config.env.update(collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1, max_episode_frames=400)
"""


def run_ding(seed: int, budget: int, threads: int, smoke: bool) -> dict:
    """The shipped config through a whole ``ding`` process (bench_algos' runner); its eval curve with wall times."""
    algos = load_bench_module("bench_algos")
    with tempfile.TemporaryDirectory() as tmp:
        config = None
        if smoke:
            config = os.path.join(tmp, "roadrunner_dqn_smoke.py")
            with open(config, "w") as f:
                f.write(_SMOKE_CONFIG)
        r = algos.run_ding(CONFIG_NAME, seed, budget, ["--train-iter", "2"] if smoke else [], config=config,
                           env={"DING_TORCH_THREADS": str(threads)}, timeout=4 * 3600)
    return {"bench": "atari_learning_run", "impl": "ding", "seed": seed, "env_step": r["env_step"],
            "train_wall_s": r["train_wall_s"], "process_wall_s": r["process_wall_s"],
            "eval_return": r["eval_return"], "wall_curve": r["wall_curve"]}


def run_sb3(python: str, seed: int, budget: int, threads: int, eval_every: int, episodes: int) -> dict:
    """The peer's run in ``python`` (a separate venv with stable-baselines3 and ale-py)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([python, "-c", _SB3_DQN, str(seed), str(budget), str(eval_every), str(threads), GAME,
                               str(episodes)], cwd=tmp, capture_output=True, text=True, timeout=4 * 3600,
                              env=dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE"))
    if proc.returncode != 0:
        raise RuntimeError(f"sb3 seed {seed} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"bench": "atari_learning_run", "impl": "sb3", "seed": seed, "env_step": out["env_step"],
            "train_wall_s": out["train_wall_s"], "process_wall_s": round(time.perf_counter() - t0, 2),
            "eval_return": out["eval_return"], "wall_curve": [tuple(x) for x in out["wall_curve"]],
            "nstep": out["nstep"], "version": out["version"]}


def peer_python(given: str | None) -> tuple[str | None, str]:
    """The interpreter that imports stable_baselines3 and ale_py: ``given``, ``$DING_BENCH_PEER_PYTHON`` or this
    one; ``(None, note)`` when none does."""
    for python in (p for p in (given, os.environ.get("DING_BENCH_PEER_PYTHON"), sys.executable) if p):
        try:
            probe = subprocess.run([python, "-c", "import stable_baselines3, ale_py, cv2"], capture_output=True,
                                   timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return python, ""
    return None, ("peer column skipped: no interpreter here imports stable_baselines3, ale_py and cv2 (install "
                  "stable-baselines3, ale-py and opencv-python-headless in a separate venv, pass --peer-python)")


# ------------------------------------------------------------------ report
def time_to(run: dict, target: float) -> float:
    """Wall seconds to the run's first evaluation with a mean return >= ``target``; inf when it never got there."""
    return next((wall for _, wall, ret in run["wall_curve"] if ret >= target), math.inf)


def summarize(runs: list[dict], target: float) -> dict:
    summary: dict = {"bench": "atari_learning_summary", "game": GAME, "target": target, "random_play": RANDOM_PLAY}
    for impl in dict.fromkeys(r["impl"] for r in runs):
        rs = [r for r in runs if r["impl"] == impl]
        times = [time_to(r, target) for r in rs]
        summary[impl] = {
            "seeds": [r["seed"] for r in rs],
            "reached": f"{sum(t < math.inf for t in times)}/{len(rs)}",
            "median_wall_to_target_s": statistics.median(times),
            "median_final_return": statistics.median(r["eval_return"] for r in rs),
            "median_best_return": statistics.median(max(x[2] for x in r["wall_curve"]) for r in rs),
            "median_train_wall_s": round(statistics.median(r["train_wall_s"] for r in rs), 1),
        }
    if "ding" in summary and "sb3" in summary:
        d, s = summary["ding"]["median_wall_to_target_s"], summary["sb3"]["median_wall_to_target_s"]
        summary["ding_vs_sb3_wall_to_target"] = round(d / s, 3) if math.isfinite(d) and math.isfinite(s) else None
    return summary


def print_table(runs: list[dict], summary: dict, notes: list[str]) -> None:
    target = summary["target"]
    print(f"{'impl':<5} {'seed':>4} {'env steps':>10} {'train s':>8} {'final return':>12} {'best return':>11} "
          f"{'s to ' + format(target, 'g'):>10}")
    for r in runs:
        t = time_to(r, target)
        print(f"{r['impl']:<5} {r['seed']:>4} {r['env_step']:>10,} {r['train_wall_s']:>8.1f} "
              f"{r['eval_return']:>12.1f} {max(x[2] for x in r['wall_curve']):>11.1f} "
              f"{'-' if math.isinf(t) else format(t, '.1f'):>10}")
    for impl in ("ding", "sb3"):
        if impl in summary:
            s = summary[impl]
            print(f"{impl:<5} median wall to {target:g}: {s['median_wall_to_target_s']:.1f} s (reached "
                  f"{s['reached']}), median final return {s['median_final_return']:.1f}")
    if summary.get("ding_vs_sb3_wall_to_target") is not None:
        print(f"ding / SB3 median wall to {target:g}: {summary['ding_vs_sb3_wall_to_target']}x (target <= 0.8)")
    for note in notes:
        print(f"note: {note}")


def curve_lines(runs: list[dict]) -> list[dict]:
    """The runs as :func:`_peer_runs.plot_curves` lines (SB3 dashed)."""
    return [dict(label=f"{r['impl']} seed {r['seed']}", seed=r["seed"], dashed=r["impl"] != "ding",
                 curve=[list(x) for x in r["wall_curve"]]) for r in runs]


def draw(runs: list[dict], path: str, target: float, python: str | None) -> str:
    """Return vs env steps and vs wall time, one line per run, as a PNG (here, or through the peer interpreter)."""
    return draw_curves(curve_lines(runs), path,
                       f"{GAME} DQN, ding (solid) vs Stable-Baselines3 (dashed); dashed line: target {target:g}, "
                       "dotted: random play", f"eval return ({EVAL_EPISODES} full games, unclipped)",
                       [(target, "--"), (RANDOM_PLAY, ":")], python)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=BUDGET, help="env steps per run")
    parser.add_argument("--target", type=float, default=DEFAULT_TARGET, help="the return to time")
    parser.add_argument("--peer-python", default=None, help="interpreter with stable_baselines3, ale_py, cv2")
    parser.add_argument("--no-peers", action="store_true", help="ding only")
    parser.add_argument("--side-by-side", action="store_true", help="a seed's ding and SB3 runs at the same time")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--smoke", action="store_true", help="ding only, 2 training iterations (the test suite)")
    parser.add_argument("--json", default=None, help="write every run with its curve to this file")
    parser.add_argument("--out", default=None, help="PNG of return vs env steps and vs wall time")
    args = parser.parse_args(argv)

    seeds = args.seeds[:1] if args.smoke else args.seeds
    python, note = (None, "peer column skipped (--no-peers or --smoke)") if (args.no_peers or args.smoke) else \
        peer_python(args.peer_python)
    notes = [note] if note else []
    runs: list[dict] = []

    def emit(run: dict) -> None:
        runs.append(run)
        print(json.dumps({k: v for k, v in run.items() if k != "wall_curve"}), flush=True)
        if args.json:  # after every run, so a long benchmark stopped early keeps what finished
            with open(args.json + ".tmp", "w") as f:
                json.dump(runs, f)
            os.replace(args.json + ".tmp", args.json)

    for seed in seeds:
        jobs = [functools.partial(run_ding, seed, args.budget, args.threads, args.smoke)]
        if python is not None:
            jobs.append(functools.partial(run_sb3, python, seed, args.budget, args.threads, EVAL_EVERY,
                                          EVAL_EPISODES))
        if args.side_by_side:
            with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
                for fut in [pool.submit(job) for job in jobs]:
                    emit(fut.result())
        else:
            for job in jobs:
                emit(job())
    summary = summarize(runs, args.target)
    if notes:
        summary["notes"] = notes
    print_table(runs, summary, notes)
    if args.out:
        print(f"plot: {draw(runs, args.out, args.target, python)}")
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
