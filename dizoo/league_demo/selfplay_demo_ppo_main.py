"""Self-play on the league demo's matrix game, built by hand from ding's workers (the shape of DI-engine's
``selfplay_demo_ppo_main.py``).

Two PPO policies play each other; a ``BattleEpisodeSerialCollector`` returns one sample list per policy, each
policy's learner trains on its own list; two ``BattleInteractionSerialEvaluator``s play the first policy against
fixed opponents (always action 0, and uniform random), each with its own stop value. The run ends when both evaluators
report their stop value, or at ``max_env_step`` / ``max_train_iter``.

Run: ``python -m dizoo.league_demo.selfplay_demo_ppo_main [config.py]`` (DI-engine's config file works as is).
"""
from __future__ import annotations

import copy
import os
import runpy
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tensorboardX import SummaryWriter

from ding.config import compile_config
from ding.envs import BaseEnvManager
from ding.model import VAC
from ding.policy import PPOPolicy
from ding.utils import ConfigError, set_pkg_seed
from ding.worker import (
    BaseLearner,
    BattleEpisodeSerialCollector,
    BattleEvalInfo,
    BattleInteractionSerialEvaluator,
    NaiveReplayBuffer,
)
from dizoo.league_demo.game_env import GameEnv
from dizoo.league_demo.selfplay_demo_ppo_config import selfplay_demo_ppo_config


class AlwaysAction:
    """A fixed opponent that plays the same action everywhere."""

    def __init__(self, action: int = 0) -> None:
        self.action = action

    def forward(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        return {env_id: {"action": np.array(self.action)} for env_id in data}

    def reset(self, data_id: list[int] | None = None) -> None:
        pass


class UniformRandom:
    """A fixed opponent that picks each action with equal probability (seeded)."""

    def __init__(self, action_num: int = 2, seed: int = 0) -> None:
        self.action_num = action_num
        self.rng = np.random.default_rng(seed)

    def forward(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        return {env_id: {"action": np.array(self.rng.integers(self.action_num))} for env_id in data}

    def reset(self, data_id: list[int] | None = None) -> None:
        pass


@dataclass
class SelfPlayResult:
    """How a self-play run ended: both stop values reached or not, the counters, and every evaluation."""

    stopped: bool
    envstep: int
    train_iter: int
    evals: list[tuple[str, BattleEvalInfo]] = field(default_factory=list)

    def last(self, name: str) -> BattleEvalInfo:
        return [info for n, info in self.evals if n == name][-1]


def main(cfg: Any, seed: int = 0, max_train_iter: int = int(1e8), max_env_step: int = int(1e8)) -> SelfPlayResult:
    cfg = compile_config(cfg, BaseEnvManager, PPOPolicy, BaseLearner, BattleEpisodeSerialCollector,
                         BattleInteractionSerialEvaluator, NaiveReplayBuffer, seed=seed, save_cfg=True)
    env_type = cfg.env.env_type

    def envs(n: int) -> BaseEnvManager:
        return BaseEnvManager([lambda: GameEnv(env_type) for _ in range(n)], cfg.env.manager)

    collector_env = envs(cfg.env.collector_env_num)
    fixed_env, random_env = envs(cfg.env.evaluator_env_num), envs(cfg.env.evaluator_env_num)
    collector_env.seed(seed)
    fixed_env.seed(seed, dynamic_seed=False)
    random_env.seed(seed, dynamic_seed=False)
    set_pkg_seed(seed, use_cuda=cfg.policy.cuda)

    policies = [PPOPolicy(cfg.policy, model=VAC(**cfg.policy.model)) for _ in range(2)]
    tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "serial"))
    # each learner keeps its checkpoints apart: <exp_name>/ckpt/learner1/, <exp_name>/ckpt/learner2/
    learners = [BaseLearner(cfg.policy.learn.learner, p.learn_mode, tb_logger, exp_name=cfg.exp_name,
                            instance_name=f"learner{i + 1}",
                            ckpt_dir=os.path.join(cfg.exp_name, "ckpt", f"learner{i + 1}"))
                for i, p in enumerate(policies)]
    collector = BattleEpisodeSerialCollector(cfg.policy.collect.collector, collector_env,
                                             [p.collect_mode for p in policies], tb_logger, exp_name=cfg.exp_name)
    # The evaluators play policy 1's collect mode (it samples its actions) against a fixed opponent each.
    evaluators = {}
    for (name, opponent), stop_value in zip((("fixed_evaluator", AlwaysAction(0)),
                                             ("uniform_evaluator", UniformRandom(seed=seed))), cfg.env.stop_value):
        eval_cfg = copy.deepcopy(cfg.policy.eval.evaluator)
        eval_cfg.stop_value = stop_value
        evaluators[name] = BattleInteractionSerialEvaluator(
            eval_cfg, fixed_env if name == "fixed_evaluator" else random_env,
            [policies[0].collect_mode, opponent], tb_logger, exp_name=cfg.exp_name, instance_name=name)

    learner1 = learners[0]
    result = SelfPlayResult(False, 0, 0)
    stop = {name: False for name in evaluators}
    try:
        while True:
            for name, evaluator in evaluators.items():
                if evaluator.should_eval(learner1.train_iter):
                    stop[name], info = evaluator.eval(learner1.save_checkpoint, learner1.train_iter, collector.envstep)
                    result.evals.append((name, info))
            if all(stop.values()):
                result.stopped = True
                break
            train_data, _ = collector.collect(train_iter=learner1.train_iter)
            for _ in range(cfg.policy.learn.update_per_collect):
                for learner, data in zip(learners, train_data):
                    learner.train(data, collector.envstep)
            if collector.envstep >= max_env_step or learner1.train_iter >= max_train_iter:
                break
    finally:
        for worker in (collector, *evaluators.values(), *learners):
            worker.close()
        tb_logger.close()
    result.envstep, result.train_iter = collector.envstep, learner1.train_iter
    return result


def load_config(path: str) -> Any:
    """The config of a config file: its ``main_config``, or (DI-engine's file) ``selfplay_demo_ppo_config``."""
    module = runpy.run_path(path)
    for name in ("main_config", "selfplay_demo_ppo_config"):
        if name in module:
            return module[name]
    raise ConfigError(f"{path}: defines neither main_config nor selfplay_demo_ppo_config")


if __name__ == "__main__":
    config = load_config(sys.argv[1]) if len(sys.argv) > 1 else selfplay_demo_ppo_config
    outcome = main(config)
    print(f"stop values reached: {outcome.stopped} after {outcome.envstep} env steps, {outcome.train_iter} train "
          "iterations")
