"""The runnable examples in entry/ keep working."""
from __future__ import annotations

import importlib.util
import os

import pytest

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(ROOT, "entry", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.convergence
def test_hand_built_loop_trains_cartpole(in_tmp_dir):
    best = _load("cartpole_dqn_main").main(seed=0, max_iterations=3000)
    assert best >= 195


def test_custom_hook_plugin_stops_early_and_logs(in_tmp_dir):
    example = _load("custom_hook")
    example.main(target=3.0, seed=0)
    result = read_result("cartpole_dqn_custom_hook")
    assert result["stop_flag"] is False  # stopped by the hook, not by the evaluator
    assert 0 < result["train_iter"] < 2000
    with open(os.path.join("cartpole_dqn_custom_hook", "log", "learner", "learner_logger.txt")) as f:
        assert "q_value_watch: Q-value EMA" in f.read()


def test_trainer_notebook_example_trains_plots_and_acts(in_tmp_dir):
    total = _load("trainer_notebook").main(seed=0, plot_path="returns.png")
    assert os.path.getsize("returns.png") > 1000
    assert total >= 150  # one greedy episode of the best checkpoint (it evaluated at >= 195)


def test_tuning_example_ranks_its_trials(in_tmp_dir):
    rows = _load("tune_lr").main(lrs=(1e-3, 1e-5), budget=3000)
    assert [r["lr"] for r in rows] == [1e-3, 1e-5]  # 1e-5 learns nothing within 3000 steps, 1e-3 reaches 195
    assert rows[0]["reached"] and not rows[1]["reached"] and rows[1]["env_step"] == 3000
    assert os.path.isdir(os.path.join("tune_lr", "lr_0.001_seed0"))
