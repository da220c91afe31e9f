"""Resuming a finished run is refused unless asked for on purpose; a resumed run's wall time counts every session."""
from __future__ import annotations

import hashlib
import os

import pytest

from ding.engine.training_view import read_eval_csv
from ding.entry import serial_pipeline
from ding.entry.cli import main
from ding.utils import ResumeError
from ding.worker import load_checkpoint_file

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_run_that_reached_its_stop_value_is_not_trained_further_by_accident(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("done"), seed=0)
    first = read_result("done")
    assert first["stop_flag"] is True
    before = _digest("done/result")
    with pytest.raises(ResumeError, match=r"(?s)run 'done' is finished: it reached its stop value.*"
                                          r"overwrite its result.*--extend.*raise env.stop_value"):
        serial_pipeline(cartpole_dqn("done"), seed=0, resume=True)
    assert _digest("done/result") == before

    # on purpose: --extend trains on to the new limit; the stop value no longer ends the run
    limit = first["train_iter"] + 100
    serial_pipeline(cartpole_dqn("done"), seed=0, max_train_iter=limit, resume=True, extend=True)
    extended = read_result("done")
    assert extended["train_iter"] == limit and extended["stop_flag"] is False


def test_raising_the_stop_value_continues_a_finished_run(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("done"), seed=0)
    stopped_at = read_result("done")["train_iter"]
    main_cfg, create_cfg = cartpole_dqn("done")
    main_cfg.env.stop_value = 1000  # above anything CartPole returns
    serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=stopped_at + 80, resume=True)
    assert read_result("done")["train_iter"] == stopped_at + 80


def test_a_run_at_its_limit_needs_a_higher_limit(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("lim"), seed=0, max_train_iter=20)
    before = _digest("lim/result")
    with pytest.raises(ResumeError, match="already at train_iter 20 .* nothing is left to do under --train-iter 20. "
                                          "To continue it, raise --train-iter / --env-step"):
        serial_pipeline(cartpole_dqn("lim"), seed=0, max_train_iter=20, resume=True)
    assert _digest("lim/result") == before
    serial_pipeline(cartpole_dqn("lim"), seed=0, max_train_iter=40, resume=True)
    assert read_result("lim")["train_iter"] == 40


def test_a_run_a_hook_ended_is_finished(in_tmp_dir, cartpole_dqn):
    main_cfg, create_cfg = cartpole_dqn(
        "hooked", stop=dict(name="stop", type="test_stop_at_iter", position="after_iter", ext_args=dict(iter=10)))
    main_cfg.policy.learn.learner.import_names = ["tests.entry._plugins"]
    serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=100)
    assert read_result("hooked")["train_iter"] == 10
    with pytest.raises(ResumeError, match="a learner hook ended it .* at train_iter 10. To continue it on purpose, add "
                                          "--extend"):
        serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=100, resume=True)


def test_extend_needs_resume_and_a_limit(in_tmp_dir, cartpole_dqn):
    with pytest.raises(ResumeError, match="use it with --resume"):
        serial_pipeline(cartpole_dqn("x"), seed=0, max_train_iter=10, extend=True)
    with pytest.raises(ResumeError, match="give one of them"):
        serial_pipeline(cartpole_dqn("x"), seed=0, resume=True, extend=True)
    assert not os.path.exists("x")


def test_cli_extend_flag(in_tmp_dir, capsys):
    assert main(["-m", "serial", "-c", CONFIG, "--exp-name", "cli_done"]) == 0
    stopped_at = read_result("cli_done")["train_iter"]
    assert main(["-m", "serial", "-c", CONFIG, "--exp-name", "cli_done", "--resume"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ding: ResumeError: resume: run 'cli_done' is finished")
    assert main(["-m", "serial", "-c", CONFIG, "--exp-name", "cli_done", "--resume", "--extend",
                 "--train-iter", str(stopped_at + 40)]) == 0
    assert read_result("cli_done")["train_iter"] == stopped_at + 40


def test_wall_time_counts_every_session_of_a_resumed_run(in_tmp_dir, cartpole_dqn):
    def cfg():
        main_cfg, create_cfg = cartpole_dqn("timed", slow=dict(name="slow", type="test_slow_down",
                                                               position="after_iter", ext_args=dict(seconds=0.01)))
        main_cfg.policy.learn.learner.import_names = ["tests.entry._plugins"]
        return main_cfg, create_cfg

    serial_pipeline(cfg(), seed=0, max_train_iter=40)
    first = read_result("timed")["wall_time_s"]
    ckpt = load_checkpoint_file("timed/ckpt/iteration_40.pth.tar", allow_pickle=True)  # the run's own file
    assert 0.4 <= ckpt["extra"]["loop"]["elapsed_s"] <= first
    serial_pipeline(cfg(), seed=0, max_train_iter=80, resume=True)
    total = read_result("timed")["wall_time_s"]
    assert total >= first + 40 * 0.01  # the first session's time plus at least the second's sleeps
    walls = [r["wall_time"] for r in read_eval_csv("timed/log/eval.csv")]
    assert walls == sorted(walls) and walls[-1] <= total
