"""Exact resume of C51, Rainbow (noise drawn from torch's RNG) and R2D2 (the collectors' LSTM states): a stopped and
resumed run ends with the same parameters and evaluations as one that never stopped."""
from __future__ import annotations

import os

import pytest
import torch

from ding.config import read_config
from ding.engine.training_view import read_eval_csv
from ding.entry import serial_pipeline

from .conftest import read_result

SERIAL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "config", "serial")


def _cfg(name, exp_name):
    main, create = read_config(os.path.join(SERIAL, name))
    main.exp_name = exp_name
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=100000))
    main.policy.eval.evaluator.eval_freq = 10
    return main, create


def _evals(exp):
    return [(r["train_iter"], r["env_step"], r["eval_return_mean"])
            for r in read_eval_csv(os.path.join(exp, "log", "eval.csv"))]


@pytest.mark.parametrize("name,n", [("cartpole_c51.py", 60), ("cartpole_rainbow.py", 60), ("cartpole_r2d2.py", 40)])
def test_stop_and_resume_matches_an_unstopped_run(in_tmp_dir, name, n):
    full = serial_pipeline(_cfg(name, "full"), seed=0, max_train_iter=n)
    serial_pipeline(_cfg(name, "part"), seed=0, max_train_iter=n // 2)
    assert read_result("part")["train_iter"] < read_result("full")["train_iter"]
    resumed = serial_pipeline(_cfg(name, "part"), seed=0, max_train_iter=n, resume=True)
    fs, rs = full.learn_mode.state_dict(), resumed.learn_mode.state_dict()
    for key in ("model", "target_model"):
        assert fs[key].keys() == rs[key].keys()
        assert all(torch.equal(fs[key][k], rs[key][k]) for k in fs[key]), key
    assert _evals("full") == _evals("part") and len(_evals("full")) >= 2
    assert read_result("full")["env_step"] == read_result("part")["env_step"]
    if "collect_state" in fs:  # R2D2: every collecting env's LSTM state continues too
        assert sorted(fs["collect_state"]) == sorted(rs["collect_state"]) and fs["collect_state"]
        assert all(torch.equal(fs["collect_state"][k], rs["collect_state"][k]) for k in fs["collect_state"])
