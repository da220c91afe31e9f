"""Connect Four by league self-play: does the main player beat the scripted player within the promised budget?

    python tests/benchmark/bench_connect_four_league.py                  # seeds 0-2, the budget of config/README.md
    python tests/benchmark/bench_connect_four_league.py --seeds 0 --budget 20000

Each seed is a whole ``ding -m serial_battle -c config/serial/connect_four_ppo_league.py`` process in a fresh
directory, limited to the budget (env steps; it stops at the stop value, mean return 0.6). From its
``battle_eval.csv`` (100 games against the scripted player every ``eval_freq`` iterations, the first player
alternating: 50 games moving first, 50 moving second) the table gives the env steps and training seconds at which an
evaluation first had >= 80 wins, the best and the last evaluation's wins. The final policy then plays 100 more
games, first player alternating, against a scripted player and envs seeded differently from the run's evaluator (a
check that the last evaluation was not a lucky draw of games).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "serial", "connect_four_ppo_league.py")
BUDGET = 300_000  # env steps, as config/README.md promises
TARGET_WINS = 80  # of 100 evaluation games


class _Acting:
    """A loaded policy with the battle workers' interface (greedy actions)."""

    def __init__(self, loaded: Any) -> None:
        self.loaded = loaded

    def forward(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        ids = list(data)
        actions = self.loaded.compute_actions(np.stack([np.asarray(data[i], dtype=np.float32) for i in ids]))
        return {i: {"action": np.asarray(a)} for i, a in zip(ids, actions)}

    def reset(self, data_id: list[int] | None = None) -> None:
        pass


def alternating_wins(run_dir: str, seed: int, games: int = 100) -> tuple[int, int, int]:
    """W/D/L of the run's newest policy against the scripted player, first player alternating (other seeds than
    the run's evaluator)."""
    from easydict import EasyDict

    from ding.entry import load_policy
    from ding.envs import BaseEnvManager
    from ding.worker import BattleInteractionSerialEvaluator
    from dizoo.board_games.connect_four.envs import ConnectFourEnv, ScriptedPlayer

    policy = _Acting(load_policy(run_dir, which="latest"))
    envs = BaseEnvManager([lambda: ConnectFourEnv(dict(first_player="alternate")) for _ in range(10)], EasyDict())
    envs.seed(seed + 1000, dynamic_seed=True)
    evaluator = BattleInteractionSerialEvaluator(EasyDict(n_episode=games, stop_value=2.0), envs,
                                                 [policy, ScriptedPlayer(seed=seed + 1000)],
                                                 exp_name=os.path.join(run_dir, "alternating_eval"))
    try:
        _, info = evaluator.eval()
    finally:
        evaluator.close()
    p0 = info.players[0]
    return p0.wins, p0.draws, p0.losses


def run_seed(seed: int, budget: int, tmp: str) -> dict[str, Any]:
    exp = f"connect_four_ppo_league_seed{seed}"
    cmd = [sys.executable, "-m", "ding", "-m", "serial_battle", "-c", CONFIG, "-s", str(seed), "--env-step",
           str(budget), "--exp-name", exp]
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"seed {seed} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    from ding.engine.training_view import read_battle_eval_csv

    run_dir = os.path.join(tmp, exp)
    rows = read_battle_eval_csv(os.path.join(run_dir, "log", "battle_eval.csv"))
    with open(os.path.join(run_dir, "result")) as f:
        result = json.load(f)
    reached = next((r for r in rows if r["wins"] >= TARGET_WINS), None)
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        alt = alternating_wins(exp, seed)
    finally:
        os.chdir(cwd)
    return {"seed": seed, "reached_env_step": None if reached is None else int(reached["env_step"]),
            "reached_train_s": None if reached is None else round(reached["wall_time"], 1),
            "best_wins": int(max(r["wins"] for r in rows)), "last_wins": int(rows[-1]["wins"]),
            "env_step": result["env_step"], "train_s": result["wall_time_s"], "alternating_wdl": list(alt),
            "evaluations": len(rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=BUDGET, help="env steps per seed")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            results.append(run_seed(seed, args.budget, tmp))
    print(f"| seed | first eval with >= {TARGET_WINS}/100 wins (env steps / train s) | best wins | last wins | "
          "env steps run / train s | final policy, 100 more games (W/D/L) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        reached = (f"{r['reached_env_step']:,} / {r['reached_train_s']} s" if r["reached_env_step"] is not None
                   else f"not within {args.budget:,}")
        alt = "/".join(map(str, r["alternating_wdl"]))
        print(f"| {r['seed']} | {reached} | {r['best_wins']} | {r['last_wins']} | {r['env_step']:,} / "
              f"{r['train_s']:.0f} s | {alt} |")
    for r in results:
        print(json.dumps(r))
    return 0 if all(r["reached_env_step"] is not None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
