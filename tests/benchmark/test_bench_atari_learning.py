"""The Atari learning benchmark: its report (default suite), a smoke run of the ding side (a few env steps, figures
not asserted) and, marked slow, ding's seed 0 over the whole budget, which must beat the target return."""
from __future__ import annotations

import importlib.util
import json
import math

import pytest

from ._bench_loader import load_bench_module


def test_time_to_target_and_summary():
    module = load_bench_module("bench_atari_learning")
    ding = {"impl": "ding", "seed": 0, "eval_return": 900.0, "train_wall_s": 50.0,
            "wall_curve": [(0, 1.0, 10.0), (5000, 20.0, 1200.0), (10000, 40.0, 900.0)]}
    sb3 = {"impl": "sb3", "seed": 0, "eval_return": 1500.0, "train_wall_s": 80.0,
           "wall_curve": [(0, 2.0, 0.0), (5000, 30.0, 400.0), (10000, 60.0, 1500.0)]}
    never = {**sb3, "seed": 1, "wall_curve": [(0, 2.0, 0.0), (5000, 30.0, 400.0)], "eval_return": 400.0}
    assert module.time_to(ding, 1000) == 20.0  # the first evaluation at or above the target, not the last
    assert module.time_to(never, 1000) == math.inf
    summary = module.summarize([ding, sb3], 1000)
    assert summary["ding"]["reached"] == "1/1" and summary["ding_vs_sb3_wall_to_target"] == round(20 / 60, 3)
    assert module.summarize([ding, never], 1000)["ding_vs_sb3_wall_to_target"] is None


@pytest.mark.benchmark
@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                    reason="ale-py is not installed (pip install -e '.[atari]')")
def test_bench_atari_learning_smoke(capsys, tmp_path):
    out = tmp_path / "runs.json"
    summary = load_bench_module("bench_atari_learning").main(["--smoke", "--json", str(out)])
    (run,) = json.loads(out.read_text())
    assert run["impl"] == "ding" and run["env_step"] > 0 and run["wall_curve"]  # the evaluation at the start
    assert summary["ding"]["seeds"] == [0] and "sb3" not in summary
    assert "peer column skipped" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                    reason="ale-py is not installed (pip install -e '.[atari]')")
@pytest.mark.timeout(4 * 3600)
def test_roadrunner_dqn_learns_within_budget(tmp_path):
    """``config/serial/roadrunner_dqn.py``, seed 0, 100k env steps: the best evaluation (5 full games, unclipped)
    reaches the benchmark's target return, far above random play."""
    module = load_bench_module("bench_atari_learning")
    out = tmp_path / "runs.json"
    summary = module.main(["--no-peers", "--seeds", "0", "--json", str(out)])
    (run,) = json.loads(out.read_text())
    assert run["env_step"] >= module.BUDGET
    assert summary["ding"]["reached"] == "1/1", run["wall_curve"]
