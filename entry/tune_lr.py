"""A small grid search over the learning rate: one ``ding.Trainer`` per trial, each stopped at a budget.

    python entry/tune_lr.py

Each trial is its own run directory (``./tune_lr/lr_<value>_seed<seed>/``); the score of a trial is the env steps it
needed to reach the stop value (the budget when it did not), so lower is better.
"""
from __future__ import annotations

import copy

import ding
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config


def trial(lr: float, seed: int, budget: int) -> dict:
    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.policy.learn.learning_rate = lr
    with ding.Trainer((main, create), seed=seed, max_env_step=budget, exp_name=f"tune_lr/lr_{lr:g}_seed{seed}") as t:
        last = t.run()
    assert last is not None
    reached = last["stop_reason"] == "stop_value"
    return {"lr": lr, "seed": seed, "reached": reached, "env_step": last["env_step"] if reached else budget,
            "eval_return": last["eval_return"]}


def main(lrs: tuple[float, ...] = (3e-4, 1e-3, 3e-3), seeds: tuple[int, ...] = (0,), budget: int = 6000) -> list:
    rows = [trial(lr, seed, budget) for lr in lrs for seed in seeds]
    rows.sort(key=lambda r: (r["env_step"], -r["eval_return"]))
    for r in rows:
        print(f"lr {r['lr']:<8g} seed {r['seed']}  env steps to 195: "
              f"{r['env_step'] if r['reached'] else '>' + str(budget):>6}  last eval {r['eval_return']:.1f}")
    return rows


if __name__ == "__main__":
    main()
