"""serial_pipeline_onpolicy / ding -m serial_onpolicy: DI-engine's on-policy config files, the shipped configs,
convergence, exact resume (also from inside a train call and with collected data not yet trained on), errors."""
from __future__ import annotations

import copy
import os

import pytest
import torch

from ding.config import read_config
from ding.engine.training_view import TrainingInterrupted, read_eval_csv
from ding.entry import serial_pipeline, serial_pipeline_onpolicy
from ding.entry.cli import main
from ding.utils import ConfigError

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# DI-engine 0.5.3's dizoo files use these keys and values (written out here, not copied): they must run unchanged.
_DI_ENGINE_FILE = '''from easydict import EasyDict
import torch.nn as nn

{name}_config = dict(
    exp_name='{name}_seed0',
    env=dict({env}),
    policy=dict({policy}),
)
{name}_config = EasyDict({name}_config)
main_config = {name}_config
{name}_create_config = dict(
    env=dict(type='{env_type}', import_names=['dizoo.classic_control.{env_type}.envs.{env_type}_env']),
    env_manager=dict(type='base'),
    policy=dict(type='{policy_type}'),
)
{name}_create_config = EasyDict({name}_create_config)
create_config = {name}_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline_onpolicy
    serial_pipeline_onpolicy((main_config, create_config), seed=0)
'''
DI_ENGINE_FILES = {
    "cartpole_ppo": dict(
        env_type="cartpole", policy_type="ppo",
        env="collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195",
        policy="""cuda=False, action_space='discrete',
        model=dict(obs_shape=4, action_shape=2, action_space='discrete', encoder_hidden_size_list=[64, 64, 128],
                   critic_head_hidden_size=128, actor_head_hidden_size=128),
        learn=dict(epoch_per_collect=2, batch_size=64, learning_rate=0.001, value_weight=0.5, entropy_weight=0.01,
                   clip_ratio=0.2, resume_training=False),
        collect=dict(n_sample=256, unroll_len=1, discount_factor=0.9, gae_lambda=0.95),
        eval=dict(evaluator=dict(eval_freq=100)),"""),
    "cartpole_a2c": dict(
        env_type="cartpole", policy_type="a2c",
        env="collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195",
        policy="""cuda=False,
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64]),
        learn=dict(batch_size=40, learning_rate=0.001, entropy_weight=0.01),
        collect=dict(n_sample=80, gae_lambda=0.95),
        eval=dict(evaluator=dict(eval_freq=50)),"""),
    "pendulum_ppo": dict(
        env_type="pendulum", policy_type="ppo",
        env="collector_env_num=10, evaluator_env_num=5, act_scale=True, n_evaluator_episode=5, stop_value=-250",
        policy="""cuda=False, action_space='continuous', recompute_adv=True,
        model=dict(obs_shape=3, action_shape=1, encoder_hidden_size_list=[64, 64], action_space='continuous',
                   actor_head_layer_num=0, critic_head_layer_num=0, sigma_type='independent', activation=nn.Tanh(),
                   bound_type='tanh'),
        learn=dict(epoch_per_collect=10, batch_size=32, learning_rate=1e-3, value_weight=0.5, entropy_weight=0.0,
                   clip_ratio=0.2, adv_norm=True, value_norm=True, ignore_done=True),
        collect=dict(n_sample=5000, unroll_len=1, discount_factor=0.9, gae_lambda=.95),
        eval=dict(evaluator=dict(eval_freq=200)),"""),
}


def _write_di_engine_file(name: str) -> str:
    path = f"{name}_config.py"
    with open(path, "w") as f:
        f.write(_DI_ENGINE_FILE.format(name=name, **DI_ENGINE_FILES[name]))
    return path


@pytest.mark.parametrize("name", sorted(DI_ENGINE_FILES))
def test_di_engine_config_files_run_unchanged(in_tmp_dir, name):
    path = _write_di_engine_file(name)
    assert main(["-m", "serial_onpolicy", "-c", path, "-s", "0", "--train-iter", "2"]) == 0
    result = read_result(f"{name}_seed0")
    assert result["train_iter"] >= 2 and result["env_step"] > 0 and result["eval_return"] is not None
    saved = read_config(f"{name}_seed0/total_config.py")[0]  # the compiled config reads back, nn.Tanh() included
    assert saved.policy.on_policy is True


SHIPPED = ["cartpole_ppo", "cartpole_a2c", "pendulum_ppo", "lunarlander_ppo"]


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_on_policy_config_runs_two_iterations(in_tmp_dir, name):
    config = os.path.join(ROOT, "config", "serial", f"{name}.py")
    assert main(["-m", "serial_onpolicy", "-c", config, "-s", "1", "--train-iter", "2"]) == 0
    result = read_result(f"{name}_seed1")
    assert result["train_iter"] >= 2 and result["seed"] == 1


@pytest.mark.convergence
def test_cartpole_ppo_reaches_195_within_its_budget(in_tmp_dir):
    """The fast convergence check of the default suite (fixed seed); the full one is bench_algos / test-all."""
    config = os.path.join(ROOT, "config", "serial", "cartpole_ppo.py")
    policy = serial_pipeline_onpolicy(config, seed=0, max_env_step=20_000)
    result = read_result("cartpole_ppo_seed0")
    assert result["stop_flag"] is True and result["eval_return"] >= 195 and result["env_step"] <= 20_000
    assert policy.eval_mode is not None
    for rel in ("total_config.py", "log/eval.csv", "log/learner/learner_logger.txt", "ckpt/ckpt_best.pth.tar"):
        assert os.path.exists(os.path.join("cartpole_ppo_seed0", rel)), rel
    assert not os.path.exists("cartpole_ppo_seed0/log/buffer")  # no replay buffer


def test_episode_collector_feeds_whole_episodes_as_samples(in_tmp_dir):
    main, create = _cartpole_ppo("episodes")
    main.policy.collect = dict(n_episode=4, discount_factor=0.99, gae_lambda=0.95,
                               collector=dict(type="episode", get_train_sample=True))
    serial_pipeline_onpolicy((main, create), seed=0, max_train_iter=1)
    result = read_result("episodes")
    assert result["train_iter"] >= 4 and result["env_step"] >= 4 * 8  # 4+ whole episodes of 8+ steps each
    main.policy.collect.collector.get_train_sample = False  # raw episodes cannot be trained on
    main.exp_name = "raw"
    with pytest.raises(ValueError, match="got a list of episodes.*get_train_sample=True"):
        serial_pipeline_onpolicy((main, create), seed=0, max_train_iter=1)


def _cartpole_ppo(exp_name: str, **hook):
    from dizoo.classic_control.cartpole.config.cartpole_ppo_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = exp_name
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=100000, **hook))
    return main, create


def _params(policy):
    return policy.learn_mode.state_dict()["model"]


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _evals(exp):
    return [(r["train_iter"], r["env_step"], r["eval_return_mean"]) for r in read_eval_csv(f"{exp}/log/eval.csv")]


def test_stop_and_resume_matches_an_unstopped_run(in_tmp_dir):
    full = serial_pipeline_onpolicy(_cartpole_ppo("full"), seed=1, max_train_iter=96)
    serial_pipeline_onpolicy(_cartpole_ppo("part"), seed=1, max_train_iter=48)
    resumed = serial_pipeline_onpolicy(_cartpole_ppo("part"), seed=1, max_train_iter=96, resume=True)
    assert read_result("part")["train_iter"] == read_result("full")["train_iter"] == 96
    assert _same(_params(full), _params(resumed))
    assert _evals("full") == _evals("part")
    fs, rs = full.learn_mode.state_dict(), resumed.learn_mode.state_dict()
    assert fs["value_norm"] == rs["value_norm"] and _same(fs["optimizer"]["state"][0], rs["optimizer"]["state"][0])


def test_resume_from_a_checkpoint_written_inside_a_train_call(in_tmp_dir):
    """One train call is 16 iterations (256 samples / 64 x 4 epochs); a hook checkpoint at iteration 40 is written
    after the whole update of that call: the resumed run continues at iteration 48, like the unstopped one."""
    full = serial_pipeline_onpolicy(_cartpole_ppo("full"), seed=2, max_train_iter=80)
    serial_pipeline_onpolicy(_cartpole_ppo("part", save_ckpt_after_iter=20, save_ckpt_after_run=False), seed=2,
                             max_train_iter=64)
    for name in os.listdir("part/ckpt"):
        if name.startswith("iteration_") and name != "iteration_40.pth.tar":
            os.remove(os.path.join("part/ckpt", name))
    resumed = serial_pipeline_onpolicy(_cartpole_ppo("part"), seed=2, max_train_iter=80, resume=True)
    assert read_result("part")["train_iter"] == 80
    assert _same(_params(full), _params(resumed))
    assert _evals("full") == _evals("part")


def test_ctrl_c_after_a_collect_keeps_the_untrained_data_and_resumes_exactly(in_tmp_dir):
    full = serial_pipeline_onpolicy(_cartpole_ppo("full"), seed=0, max_train_iter=64)
    main, create = _cartpole_ppo("part")
    main.policy.collect.collector = dict(import_names=["tests.entry._onpolicy_plugins"],
                                         callbacks=[dict(type="test_sigint_at_envstep", envstep=700)])
    with pytest.raises(TrainingInterrupted):
        serial_pipeline_onpolicy((main, create), seed=0, max_train_iter=64)
    assert read_result("part")["interrupted"] is True
    assert read_result("part")["train_iter"] == 32 and read_result("part")["env_step"] == 768  # 3rd collect kept
    resumed = serial_pipeline_onpolicy(_cartpole_ppo("part"), seed=0, max_train_iter=64, resume=True)
    assert _same(_params(full), _params(resumed))
    assert _evals("full") == _evals("part")


def test_the_pipeline_must_fit_the_policy(in_tmp_dir, cartpole_dqn):
    config = os.path.join(ROOT, "config", "serial", "cartpole_ppo.py")
    with pytest.raises(ConfigError, match=r"policy 'ppo' is on-policy .*serial_pipeline_onpolicy \(ding -m "
                                          r"serial_onpolicy\)"):
        serial_pipeline(config, seed=0)
    with pytest.raises(ConfigError, match=r"policy 'dqn' is off-policy .*serial_pipeline \(ding -m serial\)"):
        serial_pipeline_onpolicy(cartpole_dqn("dqn"), seed=0)
    main, create = cartpole_dqn("dqn")  # DQN with on_policy=True used to die in the buffer's config
    main.policy.on_policy = True
    with pytest.raises(ConfigError, match=r"policy 'dqn' is on-policy"):
        serial_pipeline((main, create), seed=0)
    main, create = _cartpole_ppo("warm")
    main.policy.random_collect_size = 100
    with pytest.raises(ConfigError, match=r"policy\.random_collect_size: 100.*no replay buffer"):
        serial_pipeline_onpolicy((main, create), seed=0)
    assert not [d for d in os.listdir(".") if d.startswith(("dqn", "warm"))]  # refused before anything is written


def test_action_shape_or_kind_that_does_not_match_the_env_is_a_clear_error(in_tmp_dir):
    main, create = _cartpole_ppo("shape")
    main.policy.model.action_shape = 3
    with pytest.raises(ConfigError, match=r"policy\.model\.action_shape: 3 does not match the action space of env "
                                          r"'cartpole', Discrete\(2\) \(expects 2\); set "
                                          r"policy\.model\.action_shape=2"):
        serial_pipeline_onpolicy((main, create), seed=0)
    from dizoo.classic_control.pendulum.config.pendulum_ppo_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = "kind"
    main.policy.action_space = main.policy.model.action_space = "discrete"
    with pytest.raises(ConfigError, match=r"policy\.action_space: 'discrete' makes PPOPolicy act in a Discrete "
                                          r"action space, but env 'pendulum' has Box.*'continuous' for Box"):
        serial_pipeline_onpolicy((main, create), seed=0)
    main.policy.action_space = main.policy.model.action_space = "continuous"
    main.policy.model.action_shape = 2
    with pytest.raises(ConfigError, match=r"policy\.model\.action_shape: 2 does not match the action space of env "
                                          r"'pendulum'"):
        serial_pipeline_onpolicy((main, create), seed=0)


def test_typos_in_on_policy_keys_are_still_errors(in_tmp_dir):
    main, create = _cartpole_ppo("typo")
    main.policy.learn.epoch_per_colect = 3
    with pytest.raises(ConfigError, match=r"policy\.learn\.epoch_per_colect: unknown key .*did you mean "
                                          r"'epoch_per_collect'"):
        serial_pipeline_onpolicy((main, create), seed=0)


def test_cli_serial_refuses_an_on_policy_config_in_one_line(in_tmp_dir, capsys):
    config = os.path.join(ROOT, "config", "serial", "cartpole_a2c.py")
    assert main(["-m", "serial", "-c", config]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ding: ConfigError: policy.on_policy: policy 'a2c' is on-policy")
