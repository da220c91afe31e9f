"""Hopper-v5 (MuJoCo): SAC, TD3 and PPO return over env steps and wall time, ding next to Stable-Baselines3 and
Tianshou, 100k env steps each.

    python tests/benchmark/bench_mujoco.py --peer-python /path/to/venv/bin/python          # SAC, seeds 0 1 2
    python tests/benchmark/bench_mujoco.py --algos sac td3 ppo --frameworks ding sb3 --seeds 0
    python tests/benchmark/bench_mujoco.py --runs-file runs.jsonl ...   # append each run as it ends (resumable)
    python tests/benchmark/bench_mujoco.py --summarize runs.jsonl       # table + summary of runs saved before
    python tests/benchmark/bench_mujoco.py --hparams di-engine ...      # SAC with DI-engine's hopper_sac_config values
    python tests/benchmark/bench_mujoco.py --smoke                      # tiny run, used by the test suite

The protocol, the same for every framework: Hopper-v5 (episodes of at most 1,000 steps, time-limit truncation
bootstrapped), one training env, every ``--eval-every`` (5,000) env steps the mean return of ``--eval-episodes`` (5)
deterministic evaluation episodes on separate envs, ``--max-env-step`` (100,000) env steps in all. The clock starts
before the envs and networks are built, so set-up, warm-up and evaluations count; imports do not. Every run is its
own process with one torch thread; runs are interleaved (ding, SB3, Tianshou for seed 0, then seed 1, ...) so the
machine's load hits all of them alike. Reported per run: the eval curve (env steps, wall seconds, return), the final
and best return, and the env steps and wall time of the first evaluation at or above ``--target`` (1,000). The
figure to read is ding's median wall time to the target over SB3's (target <= 0.8); each run also reports its
process CPU seconds (``cpu_s``), and each curve point the CPU seconds since the clock started (its 4th value), so
the CPU seconds to the target compare too (``ding_cpu_to_target_vs_sb3``): the fairer figure when the machine is
shared and the scheduler's shares differ.

Hyperparameters (the same on every side; SB3's RL-Zoo Hopper values, DI-engine's hopper_*_config.py structure):
- SAC: 256x256 actor and twin critics, Adam 3e-4 for actor, critics and temperature, batch 256, gamma 0.99,
  tau 0.005, auto temperature (target entropy -|A|, starting at 1.0 as SB3's ``ent_coef="auto"``), 10,000
  uniformly random env steps first, then one gradient step per env step, 1M replay buffer. With ``--hparams
  di-engine``, DI-engine's ``dizoo/mujoco/config/hopper_sac_config.py`` values instead, on every side: Adam 1e-3 for
  the actor and the critics and a fixed temperature of 0.2 (the rest as above); such runs are summarised apart
  (``sac@di-engine``).
- TD3: 256x256, Adam 1e-3 (actor and critic), batch 256, 10,000 random steps, exploration noise 0.1, target policy
  noise 0.2 clipped at 0.5, actor every 2 critic updates, one critic update per env step.
- PPO: separate 64x64 tanh actor and critic networks (SB3's MlpPolicy), Adam 3e-4, 2,048 env steps per rollout,
  10 epochs of batch 64, GAE 0.95, clip 0.2, no value clipping, gradient norm 0.5, gamma 0.99 (SB3's defaults,
  which RL-Zoo uses for Hopper with normalised observations; here raw). What stays each library's own: the initial
  log-std (ding -0.5, DI-engine's PPO init; SB3 0.0) and ding's advantages recomputed every epoch (DI-engine's
  ``recompute_adv``; SB3 computes them once per rollout).
ding evaluates on its train-iteration schedule: for SAC/TD3 one iteration per env step after the 10,000 random
steps, so its evaluations fall at 10,000 + multiples of ``--eval-every`` env steps (its curve's x is the env step
of each evaluation); for PPO ``eval_freq`` is set to the iterations of ``--eval-every`` env steps.

The peers are never project dependencies: install them in a separate venv (``pip install torch stable-baselines3
tianshou "gymnasium[mujoco]"``; gymnasium's MuJoCo module imports imageio, which that extra brings) and pass its
interpreter with ``--peer-python`` (or ``DING_BENCH_PEER_PYTHON``); without one the peer columns are skipped with a
note.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _peer_runs import draw_curves, find_peer_python, run_worker  # noqa: E402

ENV_ID = "Hopper-v5"
ALGOS = ("sac", "td3", "ppo")
FRAMEWORKS = ("ding", "sb3", "tianshou")
PEER_MODULES = {"sb3": "stable_baselines3", "tianshou": "tianshou"}
# which peer has which algorithm in this benchmark (Tianshou: SAC only here)
PEER_ALGOS = {"sb3": ("sac", "td3", "ppo"), "tianshou": ("sac",)}
RANDOM_STEPS = 10_000


class Protocol:
    """What every framework's run is held to."""

    def __init__(self, max_env_step: int, eval_every: int, eval_episodes: int, random_steps: int,
                 hparams: str = "zoo") -> None:
        self.max_env_step, self.eval_every = max_env_step, eval_every
        self.eval_episodes, self.random_steps = eval_episodes, random_steps
        self.hparams = hparams

    def args(self) -> list[str]:
        return ["--max-env-step", str(self.max_env_step), "--eval-every", str(self.eval_every),
                "--eval-episodes", str(self.eval_episodes), "--random-steps", str(self.random_steps),
                "--hparams", self.hparams]


HPARAMS = ("zoo", "di-engine", "di-engine-ln", "di-engine-utd2")


def sac_values(hparams: str) -> dict:
    """SAC's learning rates and temperature under one of ``HPARAMS``, the same on every side:
    ``zoo`` RL-Zoo's Hopper values (Adam 3e-4 everywhere, auto temperature starting at 1.0 as SB3's
    ``ent_coef="auto"``); ``di-engine`` DI-engine's ``dizoo/mujoco/config/hopper_sac_config.py`` (Adam 1e-3 for the
    critics and the actor, a fixed temperature of 0.2); ``di-engine-ln`` those values with a LayerNorm after every
    hidden layer of the actor and the critics (ding's ``norm_type='LN'``; Tianshou's ``norm_layer``; SB3's MLP
    policies have no such option); ``di-engine-utd2`` those values with two gradient steps per env step."""
    if hparams.startswith("di-engine"):
        return dict(lr_q=1e-3, lr_policy=1e-3, lr_alpha=3e-4, auto_alpha=False, alpha=0.2,
                    layer_norm=hparams == "di-engine-ln", utd=2 if hparams == "di-engine-utd2" else 1)
    return dict(lr_q=3e-4, lr_policy=3e-4, lr_alpha=3e-4, auto_alpha=True, alpha=1.0, layer_norm=False, utd=1)


# ---------------------------------------------------------------------------------------------------- workers
# Each runs in its own process (``--worker NAME``) and prints one JSON line; only ding's imports ding.

def ding_config(algo: str, seed: int, p: Protocol) -> tuple[dict, dict]:
    env = dict(env_id=ENV_ID, collector_env_num=1, evaluator_env_num=p.eval_episodes,
               n_evaluator_episode=p.eval_episodes, stop_value=10**9)
    hidden = dict(actor_head_hidden_size=256, critic_head_hidden_size=256)
    if algo == "sac":
        v = sac_values(p.hparams)
        policy: dict = dict(
            random_collect_size=p.random_steps,
            model=dict(obs_shape=11, action_shape=3, twin_critic=True, action_space="reparameterization", **hidden,
                       **(dict(norm_type="LN") if v["layer_norm"] else {})),
            learn=dict(update_per_collect=v["utd"], batch_size=256, learning_rate_q=v["lr_q"],
                       learning_rate_policy=v["lr_policy"], learning_rate_alpha=v["lr_alpha"], target_theta=0.005,
                       discount_factor=0.99, auto_alpha=v["auto_alpha"], alpha=v["alpha"]),
            # (eval_freq counts train iterations: utd of them per env step)
            collect=dict(n_sample=1), eval=dict(evaluator=dict(eval_freq=p.eval_every * v["utd"])),
            other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)))
    elif algo == "td3":
        policy = dict(
            random_collect_size=p.random_steps,
            model=dict(obs_shape=11, action_shape=3, twin_critic=True, action_space="regression", **hidden),
            learn=dict(update_per_collect=1, batch_size=256, learning_rate_actor=1e-3, learning_rate_critic=1e-3,
                       target_theta=0.005, discount_factor=0.99, actor_update_freq=2, noise=True, noise_sigma=0.2,
                       noise_range=dict(min=-0.5, max=0.5)),
            collect=dict(n_sample=1, noise_sigma=0.1), eval=dict(evaluator=dict(eval_freq=p.eval_every)),
            other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)))
    else:  # ppo: 2,048 env steps per collect, 10 epochs of 32 minibatches of 64 -> 320 iterations per collect
        n_sample, epochs, batch = 2048, 10, 64
        iters_per_collect = epochs * (n_sample // batch)
        policy = dict(
            recompute_adv=True, action_space="continuous",
            # SB3's MlpPolicy: separate 64-64 tanh networks for the policy and the value, each with a linear output
            # (as DI-engine's hopper_onppo_config: share_encoder=False, actor_head_layer_num=0), no value clipping
            model=dict(obs_shape=11, action_shape=3, action_space="continuous", encoder_hidden_size_list=[64, 64],
                       share_encoder=False, actor_head_layer_num=0, critic_head_layer_num=0, activation="tanh"),
            learn=dict(epoch_per_collect=epochs, batch_size=batch, learning_rate=3e-4, value_weight=0.5,
                       entropy_weight=0.0, clip_ratio=0.2, value_clip=False, adv_norm=True, value_norm=False,
                       grad_clip_value=0.5),
            collect=dict(n_sample=n_sample, discount_factor=0.99, gae_lambda=0.95),
            eval=dict(evaluator=dict(eval_freq=max(1, p.eval_every * iters_per_collect // n_sample))))
    main = dict(exp_name=f"bench_mujoco_{algo}_seed{seed}", env=env, policy=dict(cuda=False, **policy))
    create = dict(env=dict(type="mujoco", import_names=["dizoo.mujoco.envs.mujoco_env"]),
                  env_manager=dict(type="base"), policy=dict(type="ppo" if algo == "ppo" else algo))
    return main, create


def worker_ding(algo: str, seed: int, p: Protocol) -> dict:
    from easydict import EasyDict

    from ding.engine.training_view import EvalCSV
    from ding.entry import serial_pipeline, serial_pipeline_onpolicy

    main, create = (EasyDict(c) for c in ding_config(algo, seed, p))
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**9))
    pipeline = serial_pipeline_onpolicy if algo == "ppo" else serial_pipeline
    cpu_at_eval: list[float] = []  # the process's CPU seconds as each evaluation's row is written
    append = EvalCSV.append

    def append_and_time(self: Any, *args: Any, **kwargs: Any) -> None:
        cpu_at_eval.append(round(time.process_time() - cpu0, 1))
        append(self, *args, **kwargs)

    EvalCSV.append = append_and_time  # type: ignore[method-assign]
    t0, cpu0 = time.perf_counter(), time.process_time()
    pipeline((main, create), seed=seed, max_env_step=p.max_env_step)
    wall = time.perf_counter() - t0
    with open(os.path.join(main.exp_name, "result")) as f:
        result = json.load(f)
    with open(os.path.join(main.exp_name, "log", "eval.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    curve = [[int(float(r["env_step"])), round(float(r["wall_time"]), 2), round(float(r["eval_return_mean"]), 1)]
             + ([cpu_at_eval[i]] if i < len(cpu_at_eval) else []) for i, r in enumerate(rows)]
    return {"wall_s": wall, "env_step": result["env_step"], "cpu_s": round(time.process_time(), 1), "curve": curve}


def worker_sb3(algo: str, seed: int, p: Protocol) -> dict:
    import gymnasium as gym
    from stable_baselines3 import PPO, SAC, TD3
    from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
    from stable_baselines3.common.noise import NormalActionNoise

    t0, cpu0 = time.perf_counter(), time.process_time()
    curve: list[list] = []

    class Record(BaseCallback):
        def _on_step(self) -> bool:
            ev = self.parent
            curve.append([int(self.num_timesteps), round(time.perf_counter() - t0, 2),
                          round(float(ev.last_mean_reward), 1), round(time.process_time() - cpu0, 1)])
            print(json.dumps({"eval": curve[-1]}), flush=True)  # progress, readable if the run is stopped
            return True

    env = gym.make(ENV_ID)
    eval_env = gym.make(ENV_ID)
    eval_env.reset(seed=10_000 + seed)
    callback = EvalCallback(eval_env, n_eval_episodes=p.eval_episodes, eval_freq=p.eval_every, deterministic=True,
                            callback_after_eval=Record(), verbose=0)
    net = dict(net_arch=[256, 256])
    if algo == "sac":
        v = sac_values(p.hparams)
        if v["layer_norm"]:
            raise SystemExit("sb3: its MlpPolicy has no layer-norm option (use --hparams di-engine)")
        if v["lr_q"] != v["lr_policy"]:
            raise SystemExit("sb3: SAC takes one learning rate for the actor and the critics")
        # SB3's temperature optimiser shares the learning rate; with a fixed temperature it has none
        model = SAC("MlpPolicy", env, learning_rate=v["lr_q"], buffer_size=1_000_000, learning_starts=p.random_steps,
                    batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=v["utd"],
                    ent_coef="auto" if v["auto_alpha"] else v["alpha"],
                    policy_kwargs=net, seed=seed, device="cpu", verbose=0)
    elif algo == "td3":
        import numpy as np

        noise = NormalActionNoise(mean=np.zeros(3), sigma=0.1 * np.ones(3))
        model = TD3("MlpPolicy", env, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=p.random_steps,
                    batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, action_noise=noise,
                    policy_delay=2, target_policy_noise=0.2, target_noise_clip=0.5, policy_kwargs=net, seed=seed,
                    device="cpu", verbose=0)
    else:
        model = PPO("MlpPolicy", env, learning_rate=3e-4, n_steps=2048, batch_size=64, n_epochs=10, gamma=0.99,
                    gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=p.max_env_step, callback=callback)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "env_step": int(model.num_timesteps), "cpu_s": round(time.process_time(), 1),
            "curve": curve}


def worker_tianshou(algo: str, seed: int, p: Protocol) -> dict:
    if algo != "sac":
        raise SystemExit(f"tianshou: only sac in this benchmark, got {algo!r}")
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

    t0, cpu0 = time.perf_counter(), time.process_time()
    curve: list[list] = []
    np.random.seed(seed)
    torch.manual_seed(seed)
    env = gym.make(ENV_ID)
    train_envs = DummyVectorEnv([lambda: gym.make(ENV_ID)])
    test_envs = DummyVectorEnv([lambda: gym.make(ENV_ID) for _ in range(p.eval_episodes)])
    train_envs.seed(seed)
    test_envs.seed(10_000 + seed)
    obs_shape, act_shape, hidden = env.observation_space.shape, env.action_space.shape, [256, 256]
    v = sac_values(p.hparams)
    norm = dict(norm_layer=torch.nn.LayerNorm) if v["layer_norm"] else {}
    actor = ContinuousActorProbabilistic(preprocess_net=Net(state_shape=obs_shape, hidden_sizes=hidden, **norm),
                                         action_shape=act_shape, unbounded=True, conditioned_sigma=True)

    def critic() -> ContinuousCritic:
        return ContinuousCritic(preprocess_net=Net(state_shape=obs_shape, action_shape=act_shape,
                                                   hidden_sizes=hidden, concat=True, **norm))

    # AutoAlpha's log-alpha starts at 0.0 (alpha 1.0, as SB3's ent_coef="auto")
    alpha: Any = (AutoAlpha(-float(np.prod(act_shape)), 0.0, AdamOptimizerFactory(lr=v["lr_alpha"]))
                  if v["auto_alpha"] else v["alpha"])
    algorithm = SAC(policy=SACPolicy(actor=actor, action_space=env.action_space),
                    policy_optim=AdamOptimizerFactory(lr=v["lr_policy"]), critic=critic(),
                    critic_optim=AdamOptimizerFactory(lr=v["lr_q"]), critic2=critic(),
                    critic2_optim=AdamOptimizerFactory(lr=v["lr_q"]), tau=0.005, gamma=0.99, alpha=alpha)
    train_collector = Collector(algorithm, train_envs, VectorReplayBuffer(1_000_000, 1), exploration_noise=True)
    test_collector = Collector(algorithm, test_envs)
    train_collector.reset()
    # the trainer resets the collector's step count when it starts (it keeps the buffer): the warm-up's steps are
    # added to every count below, so the curve's env steps are all the steps taken, as on the other sides
    warm_up = int(train_collector.collect(n_step=p.random_steps, random=True).n_collected_steps)

    tests: list[float] = []  # each test's mean return: the trainer hands stop_fn its best score so far, not these
    collect_test = test_collector.collect

    def collect_and_keep(*args: Any, **kwargs: Any) -> Any:
        stats = collect_test(*args, **kwargs)
        if stats.returns_stat is not None:
            tests.append(float(stats.returns_stat.mean))
        return stats

    test_collector.collect = collect_and_keep  # type: ignore[method-assign]

    def record(best_return: float) -> bool:  # called after every test: the curve point (that test's mean return)
        curve.append([warm_up + int(train_collector.collect_step), round(time.perf_counter() - t0, 2),
                      round(tests[-1] if tests else float(best_return), 1), round(time.process_time() - cpu0, 1)])
        print(json.dumps({"eval": curve[-1]}), flush=True)  # progress, readable if the run is stopped
        return False

    remaining = max(p.eval_every, p.max_env_step - p.random_steps)
    algorithm.run_training(OffPolicyTrainerParams(
        training_collector=train_collector, test_collector=test_collector,
        max_epochs=max(1, remaining // p.eval_every), epoch_num_steps=p.eval_every,
        collection_step_num_env_steps=1, test_step_num_episodes=p.eval_episodes, batch_size=256,
        update_step_num_gradient_steps_per_sample=float(v["utd"]), stop_fn=record, test_in_training=False,
        verbose=False, show_progress=False))
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "env_step": warm_up + int(train_collector.collect_step),
            "cpu_s": round(time.process_time(), 1),
            "curve": curve}


WORKERS = {"ding": worker_ding, "sb3": worker_sb3, "tianshou": worker_tianshou}


# ---------------------------------------------------------------------------------------------------- driver
def first_at(curve: list[list], target: float) -> tuple[int, float, float | None] | None:
    """``(env_step, wall_s, cpu_s)`` of the first evaluation whose return is >= ``target`` (``cpu_s``: the run's
    process CPU seconds by then, None in runs recorded before the curve carried it)."""
    for point in curve:
        if point[2] >= target:
            return int(point[0]), float(point[1]), float(point[3]) if len(point) > 3 else None
    return None


def describe(run: dict, target: float) -> dict:
    """A run's figures: final and best return, and when it first reached ``target`` (env steps, wall and CPU
    seconds: on a shared machine the CPU seconds are the figure that does not depend on the other work)."""
    returns = [c[2] for c in run["curve"]]
    hit = first_at(run["curve"], target)
    return {**run, "final_return": returns[-1] if returns else None, "best_return": max(returns, default=None),
            "steps_to_target": hit[0] if hit else None, "wall_to_target_s": hit[1] if hit else None,
            "cpu_to_target_s": hit[2] if hit else None}


def group_of(run: dict) -> str:
    """The summary group of a run: its algorithm, and the hyperparameter set where it is not RL-Zoo's
    (``sac@di-engine``)."""
    hparams = run.get("hparams", "zoo")
    return run["algo"] if hparams == "zoo" else f"{run['algo']}@{hparams}"


def summarize(runs: list[dict], target: float) -> dict:
    summary: dict = {"bench": "mujoco_summary", "env_id": ENV_ID, "target": target}
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        groups.setdefault((group_of(r), r["framework"]), []).append(describe(r, target))
    for (algo, fw), rs in sorted(groups.items()):
        reached = [r for r in rs if r["wall_to_target_s"] is not None]
        summary.setdefault(algo, {})[fw] = {
            "seeds": sorted(r["seed"] for r in rs),
            "median_final_return": round(statistics.median(r["final_return"] for r in rs), 1),
            "median_best_return": round(statistics.median(r["best_return"] for r in rs), 1),
            "reached": f"{len(reached)}/{len(rs)}",
            "median_wall_s": round(statistics.median(r["wall_s"] for r in rs), 1),
            # over the runs that reached the target (see "reached")
            "median_wall_to_target_s": round(statistics.median(r["wall_to_target_s"] for r in reached), 1)
            if reached else None,
            "median_steps_to_target": statistics.median(r["steps_to_target"] for r in reached) if reached else None,
            "median_cpu_to_target_s": round(statistics.median(cpus), 1)
            if (cpus := [r["cpu_to_target_s"] for r in reached if r["cpu_to_target_s"] is not None]) else None,
        }
    for algo, by_fw in summary.items():
        if not isinstance(by_fw, dict) or "ding" not in by_fw or "sb3" not in by_fw:
            continue
        d, s = by_fw["ding"]["median_wall_to_target_s"], by_fw["sb3"]["median_wall_to_target_s"]
        if d is not None and s:
            by_fw["ding_wall_to_target_vs_sb3"] = round(d / s, 2)
        dc, sc = by_fw["ding"]["median_cpu_to_target_s"], by_fw["sb3"]["median_cpu_to_target_s"]
        if dc is not None and sc:
            by_fw["ding_cpu_to_target_vs_sb3"] = round(dc / sc, 2)
        by_fw["ding_total_wall_vs_sb3"] = round(by_fw["ding"]["median_wall_s"] / by_fw["sb3"]["median_wall_s"], 2)
    return summary


def print_table(runs: list[dict], summary: dict, notes: list[str]) -> None:
    target = summary["target"]
    print(f"{'algo':<4} {'framework':<9} {'seed':>4} {'wall s':>7} {'final':>7} {'best':>7} "
          f"{'steps to ' + format(target, 'g'):>14} {'wall to it s':>12} {'CPU to it s':>11}")
    def fmt(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for r in (describe(r, target) for r in runs):
        print(f"{group_of(r):<4} {r['framework']:<9} {r['seed']:>4} {r['wall_s']:>7.0f} "
              f"{fmt(r['final_return'], '.0f'):>7} {fmt(r['best_return'], '.0f'):>7} "
              f"{fmt(r['steps_to_target'], ','):>14} {fmt(r['wall_to_target_s'], '.0f'):>12} "
              f"{fmt(r['cpu_to_target_s'], '.0f'):>11}")
    for algo in (k for k, v in summary.items() if isinstance(v, dict)):
        for key in ("ding_wall_to_target_vs_sb3", "ding_cpu_to_target_vs_sb3", "ding_total_wall_vs_sb3"):
            if key in summary[algo]:
                print(f"{algo}: {key} = {summary[algo][key]}x")
    for note in notes:
        print(note)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=["sac"])
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--peer-python", default=None, help="interpreter with stable_baselines3 (and tianshou)")
    parser.add_argument("--max-env-step", type=int, default=100_000)
    parser.add_argument("--eval-every", type=int, default=5_000, help="env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--random-steps", type=int, default=RANDOM_STEPS, help="SAC/TD3 random warm-up env steps")
    parser.add_argument("--hparams", choices=HPARAMS, default="zoo",
                        help="SAC's learning rates and temperature: RL-Zoo's or DI-engine's hopper_sac_config's")
    parser.add_argument("--target", type=float, default=1_000.0, help="the return whose wall time is compared")
    parser.add_argument("--runs-file", default=None, help="append each finished run here (JSON lines)")
    parser.add_argument("--summarize", default=None, metavar="RUNS_FILE", help="only summarise saved runs")
    parser.add_argument("--smoke", action="store_true", help="ding SAC, one seed, 500 env steps")
    parser.add_argument("--out", default=None, help="PNG of return vs env steps and vs wall time (one per algorithm)")
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--algo", choices=ALGOS, default="sac", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    protocol = Protocol(args.max_env_step, args.eval_every, args.eval_episodes, args.random_steps, args.hparams)

    if args.worker:
        import torch

        torch.set_num_threads(1)
        print(json.dumps(WORKERS[args.worker](args.algo, args.seed, protocol)))
        return {}

    notes: list[str] = []
    if args.summarize:
        with open(args.summarize) as f:
            runs = [json.loads(ln) for ln in f if ln.strip()]
    else:
        if args.smoke:
            args.algos, args.seeds, args.frameworks = ["sac"], [0], ["ding"]
            protocol = Protocol(500, 100, 1, 200, args.hparams)
        peers = [fw for fw in args.frameworks if fw != "ding"]
        peer_python = None
        if peers:
            peer_python, note = find_peer_python(args.peer_python, [PEER_MODULES[fw] for fw in peers])
            if note:
                notes.append(note)
        runs = []
        for algo in args.algos:
            for seed in args.seeds:
                for fw in args.frameworks:
                    if fw != "ding" and (peer_python is None or algo not in PEER_ALGOS[fw]):
                        continue
                    python = sys.executable if fw == "ding" else peer_python
                    worker_args = ["--algo", algo, "--seed", str(seed), *protocol.args()]
                    result = run_worker(__file__, fw, python, worker_args, timeout=4 * 3600)
                    run = {"bench": "mujoco_run", "algo": algo, "framework": fw, "seed": seed,
                           "max_env_step": protocol.max_env_step, "eval_every": protocol.eval_every,
                           "eval_episodes": protocol.eval_episodes, "hparams": protocol.hparams,
                           "loadavg_1m": round(os.getloadavg()[0], 2),
                           **result}
                    runs.append(run)
                    print(json.dumps(run), flush=True)
                    if args.runs_file:
                        with open(args.runs_file, "a") as f:
                            f.write(json.dumps(run) + "\n")
    summary = summarize(runs, args.target)
    if notes:
        summary["notes"] = notes
    print_table(runs, summary, notes)
    if args.out:
        for path in draw(runs, args.out, args.target, args.peer_python or os.environ.get("DING_BENCH_PEER_PYTHON")):
            print(f"plot: {path}")
    print(json.dumps(summary))
    return summary


def draw(runs: list[dict], out: str, target: float, python: str | None) -> list[str]:
    """One PNG per algorithm (``out``, or ``<stem>_<algo>.png`` for several): return vs env steps and vs wall time,
    one line per run, the peers dashed."""
    algos = list(dict.fromkeys(group_of(r) for r in runs))
    stem, ext = os.path.splitext(out)
    paths = []
    for algo in algos:
        lines = [dict(label=f"{r['framework']} seed {r['seed']}", seed=r["seed"], dashed=r["framework"] != "ding",
                      curve=r["curve"]) for r in runs if group_of(r) == algo and r["curve"]]
        path = out if len(algos) == 1 else f"{stem}_{algo.replace('@', '_')}{ext or '.png'}"
        paths.append(draw_curves(lines, path, f"{ENV_ID} {algo.upper()}: ding (solid) vs peers (dashed); dashed line: "
                                 f"{target:g}", f"eval return ({runs[0]['eval_episodes']} episodes, deterministic)",
                                 [(target, "--")], python))
    return paths


if __name__ == "__main__":
    main()
