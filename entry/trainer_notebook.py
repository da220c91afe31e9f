"""Train from Python one round at a time, plot the results, save, load the policy and act.

    python entry/trainer_notebook.py        # writes ./cartpole_dqn_notebook/ and returns.png

The same code runs cell by cell in a notebook. Plotting needs matplotlib (``pip install -e '.[plot]'``).
"""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np

import ding
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config


def main(seed: int = 0, plot_path: str | None = "returns.png") -> float:
    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = "cartpole_dqn_notebook"
    results = []
    with ding.Trainer((main, create), seed=seed) as trainer:
        for result in trainer:  # one collect -> learn (-> eval) round per result
            results.append(result)
            if result["evaluated"]:
                print(f"env step {result['env_step']:>6,}  eval return {result['eval_return']:6.1f}  "
                      f"loss {result.get('learn/total_loss', float('nan')):.3f}")
        trainer.save()  # a checkpoint of the final state in ./cartpole_dqn_notebook/ckpt/

    if plot_path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        evals = [r for r in results if r["evaluated"]]
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([r["env_step"] for r in evals], [r["eval_return"] for r in evals], marker="o", label="evaluation")
        episodes = [r for r in results if r["episode_return_mean"] is not None]
        ax.plot([r["env_step"] for r in episodes], [r["episode_return_mean"] for r in episodes], alpha=0.4,
                label="training episodes")
        ax.set_xlabel("env steps")
        ax.set_ylabel("return")
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot_path)
        plt.close(fig)

    # deployment: the best checkpoint, no envs or workers built; greedy actions
    policy = ding.load_policy("cartpole_dqn_notebook")
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=123)
    total, done = 0.0, False
    while not done:
        action = policy.compute_single_action(obs.astype(np.float32))
        obs, reward, terminated, truncated, _ = env.step(int(action))
        total += float(reward)
        done = terminated or truncated
    env.close()
    print(f"one episode with the loaded policy: return {total:.0f}")
    return total


if __name__ == "__main__":
    main()
