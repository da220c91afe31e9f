"""The ding command: version, help, registry queries, eval of a checkpoint, plots."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

import ding
from ding.entry.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["-v"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"ding {ding.__version__}"


def test_console_script_version_and_help():
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ding"), "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0
    for flag in ("-m MODE", "-c CONFIG", "--seed", "--exp-name", "--train-iter", "--env-step", "--load-path",
                 "--resume", "--platform", "--module"):
        assert flag in out.stdout, flag


def test_query_registry(capsys):
    assert main(["-q", "policy"]) == 0
    out = capsys.readouterr().out
    assert "dqn" in out and "ding.policy.dqn.DQNPolicy" in out
    assert main(["-q", "env"]) == 0
    assert "cartpole" in capsys.readouterr().out


def test_query_unknown_registry(capsys):
    assert main(["-q", "polcy"]) == 2
    assert "did you mean 'policy'" in capsys.readouterr().err.lower()


def test_unknown_mode_and_missing_config(capsys):
    with pytest.raises(SystemExit):
        main(["-m", "serail", "-c", CONFIG])
    assert "unknown mode 'serail'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["-m", "serial"])
    assert e.value.code == 2
    assert "needs a config file" in capsys.readouterr().err


def test_serial_then_eval_reproduces_the_evaluators_return(in_tmp_dir, capsys):
    assert main(["-m", "serial", "-c", CONFIG, "-s", "0", "--exp-name", "cli_run"]) == 0
    with open("cli_run/result") as f:
        result = json.load(f)
    assert result["stop_flag"] is True
    ckpt = "cli_run/ckpt/ckpt_best.pth.tar"
    assert main(["-m", "eval", "-c", CONFIG, "-s", "0", "--exp-name", "cli_run_eval", "--load-path", ckpt]) == 0
    out = capsys.readouterr().out
    line = [ln for ln in out.splitlines() if ln.startswith("[eval] " + ckpt)][-1]
    returned = float(line.split("return ")[1].split(" ")[0])
    assert returned == pytest.approx(result["best_eval_return"], abs=1e-6)


def test_eval_without_checkpoint(in_tmp_dir, capsys):
    assert main(["-m", "eval", "-c", CONFIG]) == 2
    assert "--load-path" in capsys.readouterr().err


def test_plot_writes_a_png(in_tmp_dir, cartpole_dqn):
    from ding.entry import serial_pipeline

    for seed in (0, 1):
        serial_pipeline(cartpole_dqn(f"plot_seed{seed}"), seed=seed, max_train_iter=200)
    assert main(["-m", "plot", "plot_seed0", "plot_seed1", "-o", "curve.png"]) == 0
    with open("curve.png", "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width >= 400 and height >= 300
    assert os.path.getsize("curve.png") > 10_000


def test_plot_of_a_directory_without_runs(in_tmp_dir, capsys):
    os.makedirs("empty")
    assert main(["-m", "plot", "empty"]) == 1
    assert "ding: RunDataError: plot: 'empty' has no log/eval.csv" in capsys.readouterr().err


def test_user_errors_are_one_message_without_traceback(in_tmp_dir, capsys):
    with open("typo.py", "w") as f:
        f.write("import copy\n"
                "from dizoo.classic_control.cartpole.config import cartpole_dqn_config as base\n"
                "main_config, create_config = copy.deepcopy(base.main_config), base.create_config\n"
                "main_config.policy.learn.batchsize = 32\n")
    assert main(["-m", "serial", "-c", "typo.py"]) == 1
    err = capsys.readouterr().err
    assert "ding: ConfigError:" in err and "policy.learn.batchsize" in err and "batch_size" in err
    assert "Traceback" not in err
    assert main(["-m", "serial", "-c", "missing.py"]) == 1
    assert "missing.py" in capsys.readouterr().err
