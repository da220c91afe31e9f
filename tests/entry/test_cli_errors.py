"""Bad input through the ``ding`` command: one line ``ding: <Error>: ...`` naming the key or file, exit code 1,
no traceback, and no training."""
from __future__ import annotations

import os
import re

import pytest
import torch

from ding.entry.cli import main

BASE = (
    "import copy\n"
    "base = __import__('importlib').import_module('dizoo.classic_control.cartpole.config.cartpole_dqn_config')\n"
    "main_config, create_config = copy.deepcopy(base.main_config), copy.deepcopy(base.create_config)\n"
    "main_config.exp_name = 'run'\n"
)


def write(name: str, text: str) -> str:
    with open(name, "w") as f:
        f.write(text)
    return name


def one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("text,expected", [
    ("main_config = dict(a=1\n", r"ding: ConfigError: config file 'cfg\.py', line 1: syntax error \('\(' was never "
                                 r"closed\): main_config = dict\(a=1"),
    ("import os\nimport no_such_pkg_for_ding\n", r"ding: ConfigError: config file 'cfg\.py', line 2: "
                                                 r"ModuleNotFoundError: No module named 'no_such_pkg_for_ding'\. Is "
                                                 r"the package installed"),
    (BASE + "main_config.policy.learn.batch_size = 64 // 0\n",
     r"ding: ConfigError: config file 'cfg\.py', line 5: ZeroDivisionError: integer division or modulo by zero"),
])
def test_a_config_file_that_does_not_run_names_its_line(in_tmp_dir, capsys, text, expected):
    write("cfg.py", text)
    assert re.match(expected, one_line_error(capsys, ["-m", "serial", "-c", "cfg.py"]))


@pytest.mark.parametrize("line,expected", [
    ("main_config.policy.learn.batch_size = 0", "policy.learn.batch_size: must be >= 1, got 0 (in cfg.py)"),
    ("main_config.policy.learn.learning_rate = -0.01", "policy.learn.learning_rate: must be > 0, got -0.01"),
    ("main_config.policy.discount_factor = 1.5", "policy.discount_factor: must be in [0, 1], got 1.5"),
    ("main_config.policy.model.encoder_hidden_size_list = [64, 0]",
     "policy.model.encoder_hidden_size_list: item 1 of [64, 0]: must be >= 1, got 0"),
    ("main_config.policy.model.obs_shape = '4'",
     "policy.model.obs_shape: expected a list of ints >= 1 (or a single int), got str '4'"),
    ("main_config.policy.model.action_shape = 3",
     "policy.model.action_shape: 3 does not match the action space of env 'cartpole', Discrete(2)"),
    ("main_config.policy.other.eps.type = 'cosine'", "policy.other.eps.type: 'cosine' is not 'exp' or 'linear'"),
    ("main_config.env.collector_env_num = 0", "env.collector_env_num: must be >= 1, got 0"),
    ("main_config.policy.collect.n_sample = 0", "policy.collect.n_sample: must be >= 1, got 0"),
    ("main_config.exp_name = 7", "exp_name: expected str, got int 7"),
    ("main_config.exp_name = 'notes.txt/run'", "exp_name: 'notes.txt/run' needs the directory ./notes.txt/run/, "
                                               "but 'notes.txt' is a file"),
    ("create_config.env = dict(type='pendulum', import_names=['dizoo.classic_control.pendulum.envs'])\n"
     "main_config.policy.model.update(obs_shape=3, action_shape=1)",
     "policy.type: DQNPolicy ('dqn') needs a Discrete action space, but env 'pendulum' has Box("),
])
def test_config_values_out_of_range_name_the_key(in_tmp_dir, capsys, line, expected):
    write("notes.txt", "")
    write("cfg.py", BASE + line + "\n")
    err = one_line_error(capsys, ["-m", "serial", "-c", "cfg.py"])
    assert err.startswith("ding: ConfigError: ") and expected in err
    assert not os.path.exists("run/ckpt")  # nothing trained


@pytest.mark.parametrize("argv,expected", [
    (["-s", "-1"], "ding: ConfigError: seed: must be in [0, 4294967295], got -1 (set by `ding -s N`"),
    (["--env-step", "-5"], "ding: ConfigError: max_env_step (--env-step): must be >= 0, got -5"),
    (["--train-iter", "-1"], "ding: ConfigError: max_train_iter (--train-iter): must be >= 0, got -1"),
])
def test_bad_command_line_numbers(in_tmp_dir, capsys, argv, expected):
    write("cfg.py", BASE)
    assert one_line_error(capsys, ["-m", "serial", "-c", "cfg.py", *argv]).startswith(expected)
    assert not os.path.exists("run")


def test_eval_with_a_directory_or_a_checkpoint_without_model(in_tmp_dir, capsys):
    write("cfg.py", BASE)
    os.makedirs("old_run/ckpt")
    err = one_line_error(capsys, ["-m", "eval", "-c", "cfg.py", "--load-path", "old_run"])
    assert err.startswith("ding: CheckpointError: no checkpoint in 'old_run' (neither ckpt/ nor collector_ckpt/ "
                          "holds ckpt_best.pth.tar or iteration_N.pth.tar)")
    torch.save({"optimizer": {}, "last_iter": 3}, "weights.pth.tar")
    err = one_line_error(capsys, ["-m", "eval", "-c", "cfg.py", "--load-path", "weights.pth.tar"])
    assert err == ("ding: CheckpointError: eval: checkpoint 'weights.pth.tar' has no 'model' entry (it holds "
                   "['last_iter', 'optimizer']); pass a checkpoint written by a ding run (ckpt/ckpt_best.pth.tar or "
                   "ckpt/iteration_N.pth.tar)")


def test_plot_of_a_missing_directory(in_tmp_dir, capsys):
    err = one_line_error(capsys, ["-m", "plot", "no_such_run"])
    assert err.startswith("ding: RunDataError: plot: 'no_such_run' does not exist; pass the ./<exp_name>/ directory")
    write("afile", "")
    assert "plot: 'afile' is a file, not a directory" in one_line_error(capsys, ["-m", "plot", "afile"])
