"""DI-engine 0.5.3's league demo, unchanged, as a user's project on ding: ``league_demo_ppo_main.py`` with the three
modules it imports from ``dizoo.league_demo`` (copied from the 0.5.3 wheel; only those imports pointed at the copies),
run in a fresh process by ``tests/benchmark/league_demo_driver.py``. The main file imports ``gym`` and rates players
by TrueSkill, so it needs the ``gym`` and ``league`` extras."""
from __future__ import annotations

import os

import pytest

from tests.benchmark.bench_league_demo import ROOT, run_demo

pytest.importorskip("gym", reason="DI-engine's demo main imports gym (pip install 'ding[gym]')")
pytest.importorskip("trueskill", reason="the demo's league rates by TrueSkill (pip install 'ding[league]')")

PYTHON = os.environ.get("DING_TEST_PYTHON") or __import__("sys").executable


def test_league_demo_runs_unchanged_to_an_env_step_cap():
    """CI variant: the demo to a 384-env-step cap (three rounds of its three players' collect and train)."""
    result = run_demo(PYTHON, ROOT, max_env_step=384, seed=0, timeout=600)
    last = result["last"]
    assert set(last) == {"fixed_evaluator", "uniform_evaluator", "init_evaluator"}
    assert last["fixed_evaluator"]["envstep"] >= 256 and result["evals"] >= 6
    assert not result["both_stop"]  # 384 env steps at its learning rate are far too few to reach the stop values


@pytest.mark.slow
def test_league_demo_reaches_both_stop_values_without_a_cap():
    result = run_demo(PYTHON, ROOT, max_env_step=0, seed=0, timeout=3600)
    assert result["both_stop"], result["last"]
    assert result["last"]["fixed_evaluator"]["envstep"] <= 20_000
