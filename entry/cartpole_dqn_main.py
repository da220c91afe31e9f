"""CartPole DQN with the workers built by hand — the loop `serial_pipeline` runs, spelled out.

Run from the repository root: ``python entry/cartpole_dqn_main.py``. Like the pipelines, it claims a new run directory
(``./cartpole_dqn_seed0/``, or ``./cartpole_dqn_seed0_<YYMMDD_HHMMSS>/`` when that exists) and locks it, so it never
writes into an earlier run.
"""
from __future__ import annotations

import os

from tensorboardX import SummaryWriter

from ding.config import claim_run_dir, compile_config, save_config
from ding.envs import BaseEnvManager, DingEnvWrapper
from ding.model import DQN
from ding.policy import DQNPolicy, check_policy_fits_env
from ding.rl_utils import get_epsilon_greedy_fn
from ding.utils import set_pkg_seed
from ding.worker import AdvancedReplayBuffer, BaseLearner, InteractionSerialEvaluator, SampleSerialCollector
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config


def main(cfg: dict = main_config, seed: int = 0, max_iterations: int = 3000) -> float:
    cfg = compile_config(
        cfg, BaseEnvManager, DQNPolicy, BaseLearner, SampleSerialCollector, InteractionSerialEvaluator,
        AdvancedReplayBuffer, save_cfg=False, seed=seed,
    )
    # the config is known good: now claim a run directory of our own (never an earlier run's) and hold it
    with claim_run_dir(cfg.exp_name) as run_dir:
        cfg.exp_name = run_dir.path
        save_config(cfg, os.path.join(run_dir.path, "total_config.py"))
        return _train(cfg, seed, max_iterations)


def _train(cfg, seed: int, max_iterations: int) -> float:
    # gymnasium CartPole-v1 with a 200-step limit is CartPole-v0; DingEnvWrapper adapts it to ding's env interface.
    import gymnasium as gym

    def make_env() -> DingEnvWrapper:
        return DingEnvWrapper(gym.make("CartPole-v1", max_episode_steps=200), {"env_wrapper": "default"})

    collector_env = BaseEnvManager([make_env for _ in range(cfg.env.collector_env_num)], cfg.env.manager)
    evaluator_env = BaseEnvManager([make_env for _ in range(cfg.env.evaluator_env_num)], cfg.env.manager)
    collector_env.seed(seed)  # dynamic seeds: every collector episode differs, reproducibly
    evaluator_env.seed(seed, dynamic_seed=False)  # the same evaluation episodes every time
    set_pkg_seed(seed, use_cuda=cfg.policy.cuda)

    model = DQN(**cfg.policy.model)
    policy = DQNPolicy(cfg.policy, model=model)
    check_policy_fits_env(policy, collector_env, "CartPole-v1")  # shapes and action space, before anything runs
    tb_logger = SummaryWriter(os.path.join(f"./{cfg.exp_name}/log/", "serial"))
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, tb_logger, exp_name=cfg.exp_name)
    collector = SampleSerialCollector(cfg.policy.collect.collector, collector_env, policy.collect_mode, tb_logger,
                                      exp_name=cfg.exp_name)
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger,
                                           exp_name=cfg.exp_name)
    replay_buffer = AdvancedReplayBuffer(cfg.policy.other.replay_buffer, tb_logger, exp_name=cfg.exp_name)
    eps_cfg = cfg.policy.other.eps
    epsilon_greedy = get_epsilon_greedy_fn(eps_cfg.start, eps_cfg.end, eps_cfg.decay, eps_cfg.type)

    eval_return = float("-inf")
    try:
        while learner.train_iter < max_iterations:
            if evaluator.should_eval(learner.train_iter):
                stop, episode_info = evaluator.eval(learner.save_checkpoint, learner.train_iter, collector.envstep)
                eval_return = evaluator.best_return
                if stop:
                    break
            eps = epsilon_greedy(collector.envstep)
            new_data = collector.collect(train_iter=learner.train_iter, policy_kwargs={"eps": eps})
            replay_buffer.push(new_data, cur_collector_envstep=collector.envstep)
            if replay_buffer.count() < cfg.policy.learn.batch_size:
                continue  # not enough data for one batch yet: collect more first
            for _ in range(cfg.policy.learn.update_per_collect):
                train_data = replay_buffer.sample(cfg.policy.learn.batch_size, learner.train_iter)
                if train_data is None:
                    break
                learner.train(train_data, collector.envstep)
                if cfg.policy.priority:
                    replay_buffer.update(learner.priority_info)
    finally:
        for worker in (collector, evaluator, learner, replay_buffer):
            worker.close()
        tb_logger.close()
    return eval_return


if __name__ == "__main__":
    print(f"best evaluation return: {main():.1f}")
