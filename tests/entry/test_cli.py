"""The ding command: version, help, registry queries, eval of a checkpoint, plots."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys

import pytest

import ding
from ding.entry.cli import main
from ding.entry.cli_modes import MODES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["-v"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"ding {ding.__version__}"


def test_console_script_help_lists_only_the_modes_that_exist():
    ding = os.path.join(os.path.dirname(sys.executable), "ding")
    out = subprocess.run([ding, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    listed = re.findall(r"^  (\w+) +(.+)$", out.stdout.split("modes (")[1].split("examples:")[0], re.MULTILINE)
    assert listed == sorted((name, m.help) for name, m in MODES.items())
    assert {"serial", "serial_onpolicy", "eval", "plot", "parallel", "dist"} <= {name for name, _ in listed}
    options = out.stdout.split("modes (")[0]
    for flag in ("--platform", "--module", "-cdh", "--coordinator-host", "--learner-port", "--collector-host"):
        assert flag not in options, flag  # flags of one mode: `ding -m dist --help` shows them
    dist = subprocess.run([ding, "-m", "dist", "--help"], capture_output=True, text=True, timeout=120)
    for flag in ("--module", "--module-name", "--coordinator-host", "--learner-port", "--collector-host"):
        assert flag in dist.stdout, flag
    serial = subprocess.run([ding, "-m", "serial", "--help"], capture_output=True, text=True, timeout=120)
    assert serial.returncode == 0
    for flag in ("-c CONFIG", "--seed", "--exp-name", "--train-iter", "--env-step", "--resume", "--extend"):
        assert flag in serial.stdout, flag
    assert "--load-path" not in serial.stdout  # eval's flag: shown by ding -m eval --help
    onpolicy = subprocess.run([ding, "-m", "serial_onpolicy", "--help"], capture_output=True, text=True, timeout=120)
    for flag in ("-c CONFIG", "--seed", "--train-iter", "--env-step", "--resume", "--extend"):
        assert flag in onpolicy.stdout, flag
    assert "--load-path" in subprocess.run([ding, "-m", "eval", "--help"], capture_output=True, text=True,
                                           timeout=120).stdout


def test_a_new_mode_registers_its_help_and_flags(monkeypatch, capsys):
    from ding.entry import cli_modes

    monkeypatch.setattr(cli_modes, "MODES", dict(cli_modes.MODES))
    monkeypatch.setattr("ding.entry.cli.MODES", cli_modes.MODES)
    seen = {}

    @cli_modes.mode("toy", add_arguments=lambda p: p.add_argument("--toy-size", type=int, default=1),
                    examples=("ding -m toy --toy-size 3",))
    def run_toy(args):
        """play with a toy"""
        seen["size"] = args.toy_size
        return 0

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert re.search(r"^  toy +play with a toy$", out, re.MULTILINE) and "ding -m toy --toy-size 3" in out
    with pytest.raises(SystemExit):
        main(["-m", "toy", "--help"])
    assert "--toy-size TOY_SIZE" in capsys.readouterr().out
    assert main(["-m", "toy", "--toy-size", "3"]) == 0 and seen == {"size": 3}
    with pytest.raises(SystemExit) as e:
        main(["-m", "serial", "--toy-size", "3"])  # another mode's flag
    assert e.value.code == 2
    assert "unrecognized arguments: --toy-size 3 (ding -m serial --help lists its options)" in capsys.readouterr().err


def test_resume_command_names_config_seed_exp_name_and_limits():
    import argparse

    from ding.entry.cli_modes import resume_command

    args = argparse.Namespace(mode="serial", config="my configs/cp.py", exp_name=None, train_iter=300,
                              env_step=int(1e10))
    assert resume_command(args, 2, "cp_seed2", "cp_seed2") == (
        "ding -m serial -c 'my configs/cp.py' -s 2 --train-iter 300 --resume")
    # the run went to a renewed directory: the command names it
    assert resume_command(args, 2, "cp_seed2_260101_120000", "cp_seed2") == (
        "ding -m serial -c 'my configs/cp.py' -s 2 --exp-name cp_seed2_260101_120000 --train-iter 300 --resume")
    args.exp_name, args.train_iter = "mine", int(1e10)
    assert resume_command(args, 1, "mine_seed1", "cp_seed1") == (
        "ding -m serial -c 'my configs/cp.py' -s 1 --exp-name mine_seed1 --resume")


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
    assert main(["-m", "eval"]) == 2
    assert "--load-path" in capsys.readouterr().err
    assert main(["-m", "eval", "-c", CONFIG]) != 0  # the config names no policy.load_path either
    err = capsys.readouterr().err
    assert "--load-path" in err and "policy.load_path" in err


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


def _fake_run(name: str, rows: list[tuple[int, float]]) -> None:
    os.makedirs(f"{name}/log")
    with open(f"{name}/log/eval.csv", "w") as f:
        f.write("train_iter,env_step,eval_return_mean,eval_return_std,wall_time\n")
        f.writelines(f"{i},{step},{ret},0,{i}\n" for i, (step, ret) in enumerate(rows))


def test_plot_writes_to_the_current_directory_never_into_a_run(in_tmp_dir, capsys):
    _fake_run("a_seed0", [(0, 10), (100, 50), (200, 200)])  # reached the stop value early
    _fake_run("a_seed1", [(0, 10), (100, 30), (200, 90), (400, 200)])
    _fake_run("b", [(0, 5), (300, 100)])
    before = {d: sorted(os.listdir(d)) for d in ("a_seed0", "a_seed1", "b")}
    assert main(["-m", "plot", "a_seed0", "a_seed1", "b"]) == 0
    assert capsys.readouterr().out.strip() == "ding: wrote eval_return_a_b.png"
    assert os.path.getsize("eval_return_a_b.png") > 10_000
    assert {d: sorted(os.listdir(d)) for d in before} == before
    assert main(["-m", "plot", "b", "-o", "mine.png"]) == 0 and os.path.isfile("mine.png")


def test_plot_says_when_a_finished_seed_is_held_at_its_last_value(in_tmp_dir):
    from ding.entry.plot import eval_figure

    _fake_run("a_seed0", [(0, 10), (100, 50), (200, 200)])
    _fake_run("a_seed1", [(0, 10), (100, 30), (200, 90), (400, 200)])
    fig = eval_figure(["a_seed0", "a_seed1"])
    legend = fig.axes[0].get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["a_seed{0, 1}: mean, band min-max; seed 0 ended earlier: its last return is used from its end "
                      "on (x)"]
    fig.canvas.draw()  # the legend sits below the axes, off the curves
    assert legend.get_window_extent().y1 <= fig.axes[0].get_window_extent().y0
    _fake_run("c_seed0", [(0, 1), (100, 2)])
    _fake_run("c_seed1", [(0, 1), (100, 3)])  # same length: nothing held
    labels = [t.get_text() for t in eval_figure(["c_seed0", "c_seed1"]).axes[0].get_legend().get_texts()]
    assert labels == ["c_seed{0, 1}: mean, band min-max"]
    labels = [t.get_text() for t in eval_figure(["c_seed1"]).axes[0].get_legend().get_texts()]
    assert labels == ["c_seed1"]  # one run keeps its seed


def test_plot_of_a_directory_without_runs(in_tmp_dir, capsys):
    os.makedirs("empty")
    assert main(["-m", "plot", "empty"]) == 1
    assert "ding: RunDataError: plot: 'empty' has no log/eval.csv" in capsys.readouterr().err


def test_user_errors_are_one_message_without_traceback(in_tmp_dir, capsys):
    with open("typo.py", "w") as f:
        f.write("import copy\n"
                "base = __import__('importlib').import_module("
                "'dizoo.classic_control.cartpole.config.cartpole_dqn_config')\n"
                "main_config, create_config = copy.deepcopy(base.main_config), base.create_config\n"
                "main_config.policy.learn.batchsize = 32\n")
    assert main(["-m", "serial", "-c", "typo.py"]) == 1
    err = capsys.readouterr().err
    assert "ding: ConfigError:" in err and "policy.learn.batchsize" in err and "batch_size" in err
    assert "Traceback" not in err
    assert main(["-m", "serial", "-c", "missing.py"]) == 1
    assert "missing.py" in capsys.readouterr().err


def test_help_and_the_command_parser_do_not_import_torch():
    # `ding --help`, `ding -m MODE --help` and a typo'd mode answer without importing torch (0.06 s instead of ~2 s);
    # the pipelines load it when a mode runs.
    import subprocess
    import sys

    code = ("import sys; from ding.entry.cli import build_parser, main; "
            "import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['-m', 'serial', '--help'])\n    except SystemExit:\n        pass\n"
            "print('torch' in sys.modules, 'ding.entry.trainer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
    import ding.entry

    assert ding.entry.serial_pipeline.__module__ == "ding.entry.serial_entry"  # the lazy names still resolve
