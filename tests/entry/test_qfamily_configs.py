"""The Q-family configs through the ``ding`` command: DI-engine 0.5.3's own files run unchanged, every shipped
config of C51 / Rainbow / R2D2 / Acrobot DQN / LunarLander DQN runs, and the cheap ones converge."""
from __future__ import annotations

import os

import pytest

from ding.config import read_config
from ding.entry.cli import main
from ding.utils import ConfigError
from tests.di_engine_files import copy_di_engine_file

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERIAL = os.path.join(ROOT, "config", "serial")
CARTPOLE = "dizoo/classic_control/cartpole/config/"
DI_ENGINE_FILES = [CARTPOLE + f for f in ("cartpole_dqn_config.py", "cartpole_c51_config.py",
                                          "cartpole_rainbow_config.py", "cartpole_r2d2_config.py")]
OURS = ["cartpole_c51.py", "cartpole_rainbow.py", "cartpole_r2d2.py", "acrobot_dqn.py", "lunarlander_dqn.py"]


@pytest.mark.parametrize("path", DI_ENGINE_FILES, ids=os.path.basename)
def test_di_engine_files_run_unchanged(in_tmp_dir, path):
    config = copy_di_engine_file(path, str(in_tmp_dir))
    assert main(["-m", "serial", "-c", config, "-s", "0", "--train-iter", "2"]) == 0
    result = read_result(read_config(config)[0].exp_name)
    assert result["train_iter"] >= 2 and result["env_step"] > 0


@pytest.mark.parametrize("name", OURS)
def test_every_q_family_config_runs_two_iterations(in_tmp_dir, name):
    config = os.path.join(SERIAL, name)
    assert main(["-m", "serial", "-c", config, "-s", "0", "--train-iter", "2"]) == 0
    result = read_result(read_config(config)[0].exp_name)
    assert result["train_iter"] >= 2


def test_r2d2_trains_from_the_sequence_buffer(in_tmp_dir):
    """The same CartPole R2D2 config with sequences cut from the sequence buffer's windows (no priorities)."""
    from ding.entry import serial_pipeline

    main_cfg = read_config(os.path.join(SERIAL, "cartpole_r2d2.py"))[0]
    main_cfg.exp_name = "r2d2_windows"
    main_cfg.policy.priority = main_cfg.policy.priority_IS_weight = False
    main_cfg.policy.other.replay_buffer = dict(replay_buffer_size=20000, sequence_len=20)
    create_cfg = read_config(os.path.join(SERIAL, "cartpole_r2d2.py"))[1]
    create_cfg.replay_buffer = dict(type="sequence")
    serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=3)
    assert read_result("r2d2_windows")["train_iter"] >= 3
    main_cfg.exp_name = "r2d2_short_windows"
    main_cfg.policy.other.replay_buffer.sequence_len = 10
    with pytest.raises(ConfigError, match=r"policy\.collect\.unroll_len: 20 .* is longer than the sequence buffer's "
                                        r"sequences \(policy\.other\.replay_buffer\.sequence_len=10\)"):
        serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=3)


@pytest.mark.convergence
@pytest.mark.parametrize("name,budget", [("cartpole_c51.py", 10_000), ("cartpole_rainbow.py", 10_000),
                                         ("cartpole_r2d2.py", 40_000)])
def test_cartpole_q_family_reaches_195_on_seed_0(in_tmp_dir, name, budget):
    config = os.path.join(SERIAL, name)
    assert main(["-m", "serial", "-c", config, "-s", "0", "--env-step", str(budget)]) == 0
    result = read_result(read_config(config)[0].exp_name)
    assert result["stop_flag"] is True and result["eval_return"] >= 195 and result["env_step"] <= budget


def test_a_typo_in_a_key_di_engine_files_use_is_still_an_error(in_tmp_dir, capsys):
    config = copy_di_engine_file(CARTPOLE + "cartpole_r2d2_config.py", str(in_tmp_dir))
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace("traj_len_inf=True", "traj_len_inff=True"))
    assert main(["-m", "serial", "-c", config, "-s", "0", "--train-iter", "2"]) != 0
    err = capsys.readouterr().err
    assert "ConfigError: policy.collect.traj_len_inff: unknown key" in err and "did you mean 'traj_len_inf'?" in err
