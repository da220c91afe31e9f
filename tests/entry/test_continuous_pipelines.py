"""SAC, DDPG and TD3 through the serial pipeline: the shipped Pendulum configs, DI-engine's own config files run
unchanged, a fixed-seed SAC convergence run, exact resume, and set-up errors."""
from __future__ import annotations

import copy
import os
import re

import pytest
import torch

from ding.config import read_config
from ding.engine.training_view import read_eval_csv
from ding.entry import serial_pipeline
from ding.entry.cli import main
from ding.utils import ConfigError
from tests.di_engine_files import copy_di_engine_file

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALGOS = ["sac", "ddpg", "td3"]
SAC_BUDGET = 4000  # env steps promised in config/README.md for config/serial/pendulum_sac.py


def shipped(algo: str) -> str:
    return os.path.join(ROOT, "config", "serial", f"pendulum_{algo}.py")


@pytest.mark.parametrize("algo", ALGOS)
def test_shipped_config_runs_two_iterations(in_tmp_dir, algo):
    assert main(["-m", "serial", "-c", shipped(algo), "-s", "0", "--train-iter", "2"]) == 0
    result = read_result(f"pendulum_{algo}_seed0")
    assert result["train_iter"] == 2 and result["env_step"] >= read_config(shipped(algo))[0].policy.random_collect_size


@pytest.mark.parametrize("algo", ALGOS)
def test_di_engine_config_file_runs_unchanged(in_tmp_dir, algo):
    """DI-engine 0.5.3's own dizoo file, byte for byte, through `ding -m serial -c <file>`."""
    path = copy_di_engine_file(f"dizoo/classic_control/pendulum/config/pendulum_{algo}_config.py", str(in_tmp_dir))
    assert main(["-m", "serial", "-c", path, "-s", "0", "--train-iter", "2"]) == 0
    result = read_result(f"pendulum_{algo}_seed0")
    assert result["train_iter"] == 2
    total = read_config(os.path.join(f"pendulum_{algo}_seed0", "total_config.py"))[0]
    assert total.policy.type == algo and total.env.act_scale is True


# env steps promised in config/README.md for DI-engine's own files (their hyperparameters train 0.04-0.1 gradient
# steps per env step, so they need many more env steps than ding's configs)
DI_ENGINE_BUDGETS = {"sac": 50_000, "td3": 250_000, "ddpg": 200_000}


@pytest.mark.slow
@pytest.mark.convergence
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("algo", ALGOS)
def test_di_engine_config_file_reaches_minus_250_on_seeds_0_1_2(in_tmp_dir, algo):
    path = copy_di_engine_file(f"dizoo/classic_control/pendulum/config/pendulum_{algo}_config.py", str(in_tmp_dir))
    budget = DI_ENGINE_BUDGETS[algo]
    assert main(["-m", "serial", "-c", path, "-s", "0", "-s", "1", "-s", "2", "--env-step", str(budget)]) == 0
    for seed in (0, 1, 2):
        result = read_result(f"pendulum_{algo}_seed{seed}")
        assert result["stop_flag"] is True and result["eval_return"] >= -250 and result["env_step"] <= budget, result


def test_a_typo_in_a_di_engine_file_is_still_an_error(in_tmp_dir, capsys):
    path = copy_di_engine_file("dizoo/classic_control/pendulum/config/pendulum_sac_config.py", str(in_tmp_dir))
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("learning_rate_alpha=", "learning_rate_alhpa="))
    assert main(["-m", "serial", "-c", path, "--train-iter", "2"]) == 1
    err = capsys.readouterr().err
    assert "policy.learn.learning_rate_alhpa: unknown key" in err and "did you mean 'learning_rate_alpha'?" in err
    assert not os.path.exists("pendulum_sac_seed0/result")


@pytest.mark.convergence
def test_sac_reaches_minus_250_on_pendulum(in_tmp_dir):
    main_cfg, create_cfg = read_config(shipped("sac"))
    main_cfg.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**9))
    serial_pipeline((main_cfg, create_cfg), seed=0, max_env_step=SAC_BUDGET)
    result = read_result("pendulum_sac_seed0")
    assert result["stop_flag"] is True, result
    assert result["eval_return"] >= -250 and result["env_step"] <= SAC_BUDGET


def _short(algo: str, exp_name: str) -> tuple:
    """The shipped config, made small enough to resume in seconds."""
    main_cfg, create_cfg = read_config(shipped(algo))
    main_cfg = copy.deepcopy(main_cfg)
    main_cfg.exp_name = exp_name
    main_cfg.policy.random_collect_size = 64
    main_cfg.policy.learn.batch_size = 16
    main_cfg.policy.model.actor_head_hidden_size = main_cfg.policy.model.critic_head_hidden_size = 16
    main_cfg.policy.eval.evaluator.eval_freq = 20
    main_cfg.env.evaluator_env_num = main_cfg.env.n_evaluator_episode = 1
    main_cfg.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**9))
    return main_cfg, create_cfg


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_stop_and_resume_matches_an_unstopped_run(in_tmp_dir, algo):
    """Optimizers, target networks, log(alpha) (SAC) and the actor delay (TD3) all come back: the resumed run ends
    with the same parameters and evaluations, bit for bit, as one that never stopped (45 is odd: TD3 resumes
    between an actor update and the next)."""
    full = serial_pipeline(_short(algo, "full"), seed=0, max_train_iter=90)
    serial_pipeline(_short(algo, "part"), seed=0, max_train_iter=45)
    assert read_result("part")["train_iter"] == 45
    resumed = serial_pipeline(_short(algo, "part"), seed=0, max_train_iter=90, resume=True)
    fs, rs = full.learn_mode.state_dict(), resumed.learn_mode.state_dict()
    for part in ("model", "target_model"):
        assert fs[part].keys() == rs[part].keys()
        assert all(torch.equal(fs[part][k], rs[part][k]) for k in fs[part]), part
    if algo == "sac":
        assert torch.equal(fs["log_alpha"], rs["log_alpha"])
    evals = [[(r["train_iter"], r["env_step"], r["eval_return_mean"]) for r in read_eval_csv(f"{exp}/log/eval.csv")]
             for exp in ("full", "part")]
    assert evals[0] == evals[1] and len(evals[0]) >= 4


@pytest.mark.parametrize("change,expected", [
    (dict(action_shape=2), r"policy\.model\.action_shape: 2 does not match the action space of env 'pendulum', "
                           r"Box\(-1\.0, 1\.0, \(1,\), float32\) \(expects 1\); set policy\.model\.action_shape=1"),
    (dict(act_scale=False), r"acts in \[-1, 1\], but env 'pendulum' has Box\(-2\.0, 2\.0, \(1,\), float32\)"),
])
def test_setup_errors_name_the_key_and_the_fix(in_tmp_dir, change, expected):
    main_cfg, create_cfg = read_config(shipped("sac"))
    if "action_shape" in change:
        main_cfg.policy.model.action_shape = change["action_shape"]
    else:
        main_cfg.env.act_scale = change["act_scale"]
    with pytest.raises(ConfigError, match=expected):
        serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=1)


def test_a_continuous_policy_on_a_discrete_env_is_refused_in_one_line(in_tmp_dir, capsys):
    with open("cfg.py", "w") as f:
        f.write("import copy\n"
                "base = __import__('importlib').import_module("
                "'dizoo.classic_control.cartpole.config.cartpole_dqn_config')\n"
                "main_config, create_config = copy.deepcopy(base.main_config), copy.deepcopy(base.create_config)\n"
                "main_config.policy = dict(model=dict(obs_shape=4, action_shape=2))\n"
                "create_config.policy.type = 'sac'\n")
    assert main(["-m", "serial", "-c", "cfg.py", "--train-iter", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(r"ding: ConfigError: policy\.type: SACPolicy \('sac'\) needs a Box action space, but env "
                        r"'cartpole' has Discrete\(2\)\. Use a policy made for this action space, or an env with Box "
                        r"actions", err), err
