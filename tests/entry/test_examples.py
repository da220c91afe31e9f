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
