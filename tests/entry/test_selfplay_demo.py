"""DI-engine's self-play demo config through ding: it compiles unchanged, and the self-play loop written the way
DI-engine's ``selfplay_demo_ppo_main.py`` is reaches both of its stop values on the prisoner's dilemma."""
from __future__ import annotations

import copy
import os
import runpy

import pytest

from ding.config import compile_config
from ding.envs import BaseEnvManager
from ding.policy import PPOPolicy
from ding.worker import BaseLearner, BattleEpisodeSerialCollector, BattleInteractionSerialEvaluator, NaiveReplayBuffer
from dizoo.league_demo.selfplay_demo_ppo_main import load_config, main
from tests.di_engine_files import copy_di_engine_file

DI_CONFIG = "dizoo/league_demo/selfplay_demo_ppo_config.py"


def di_engine_config(tmp_dir):
    path = copy_di_engine_file(DI_CONFIG, str(tmp_dir))
    return runpy.run_path(path)["selfplay_demo_ppo_config"], path


def quiet(cfg):
    cfg = copy.deepcopy(cfg)
    cfg.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**9))
    return cfg


def test_di_engine_selfplay_config_compiles_unchanged(in_tmp_dir):
    cfg, path = di_engine_config(in_tmp_dir)
    compiled = compile_config(cfg, BaseEnvManager, PPOPolicy, BaseLearner, BattleEpisodeSerialCollector,
                              BattleInteractionSerialEvaluator, NaiveReplayBuffer, save_cfg=False)
    assert compiled.env.env_type == "prisoner_dilemma" and list(compiled.env.stop_value) == [-10.1, -5.05]
    collector = compiled.policy.collect.collector
    assert collector.type == "episode_1v1" and collector.get_train_sample
    assert compiled.policy.eval.evaluator.type == "battle_interaction"
    assert compiled.policy.eval.evaluator.n_episode == 100 and compiled.policy.learn.update_per_collect == 3
    assert load_config(path) == cfg  # the example's command line reads DI-engine's file too


def test_selfplay_loop_reaches_both_stop_values_ci(in_tmp_dir):
    """CI variant: DI-engine's config with a 30x learning rate (3e-4) so that it converges in a few collects."""
    cfg, _ = di_engine_config(in_tmp_dir)
    cfg = quiet(cfg)
    cfg.policy.learn.learning_rate = 3e-4
    result = main(cfg, seed=0, max_env_step=4096)
    assert result.stopped, [(n, i.players[0].return_mean) for n, i in result.evals]
    assert result.envstep <= 2048
    fixed, uniform = result.last("fixed_evaluator").players[0], result.last("uniform_evaluator").players[0]
    assert fixed.return_mean >= -10.1 and uniform.return_mean >= -5.05  # player 0 defects (nearly) always
    first = [i for n, i in result.evals if n == "uniform_evaluator"][0].players[0]
    assert first.return_mean < -5.05  # the untrained policy did not reach it
    assert os.path.isfile(os.path.join(cfg.exp_name, "ckpt", "learner1", "ckpt_best.pth.tar"))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_selfplay_loop_reaches_both_stop_values_di_engine_config(in_tmp_dir, seed):
    """DI-engine's config unchanged (learning rate 1e-5): DI-engine 0.5.3 needs about 5k env steps."""
    cfg, _ = di_engine_config(in_tmp_dir)
    result = main(quiet(cfg), seed=seed, max_env_step=20_000)
    assert result.stopped and result.envstep <= 10_000, (result.envstep, result.train_iter)
