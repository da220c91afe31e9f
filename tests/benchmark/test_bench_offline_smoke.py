"""Smoke-sized runs of the offline benchmarks: the data-set scoring, bench_offline's runner on ding's own IQL, BC,
CQL and TD3BC configs, and bench_offline_speed's ding half."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ding.config import read_config
from ding.entry import collect_demo_data
from tests.di_engine_files import copy_di_engine_file

pytest.importorskip("h5py", reason="the 'offline' extra (h5py) is not installed")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

pytestmark = pytest.mark.benchmark


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench_offline")
    cfg = read_config(copy_di_engine_file("dizoo/classic_control/pendulum/config/pendulum_cql_config.py", str(d)))
    cwd = os.getcwd()
    os.chdir(d)
    try:
        return collect_demo_data(cfg, 0, 400, str(d / "pendulum_medium.hdf5"), random_policy=True,
                                 attrs={"random_return": -1200.0, "expert_return": -200.0})
    finally:
        os.chdir(cwd)


def test_normalised_score():
    from offline_datasets import normalised_score

    meta = {"random_return": -1200.0, "expert_return": -200.0}
    assert normalised_score(-1200.0, meta) == 0 and normalised_score(-200.0, meta) == 100
    assert normalised_score(-300.0, meta) == pytest.approx(90.0)


@pytest.mark.parametrize("config", ["pendulum_iql", "pendulum_bc", "pendulum_cql_medium", "pendulum_td3_bc_medium"])
def test_bench_offline_runs_ding_configs(tmp_path, pendulum_data, config):
    from bench_offline import run_one

    r = run_one(config, pendulum_data, 0, 20, str(tmp_path))
    assert r["train_iter"] == 0 and r["config"] == config  # evaluated at iteration 0 (next evaluation at 100)
    assert r["best_score"] == pytest.approx(100 * (r["best_return"] + 1200) / 1000)


def test_bench_offline_speed_ding_half(tmp_path, pendulum_data):
    out = subprocess.run([sys.executable, os.path.join(HERE, "bench_offline_speed.py"), pendulum_data, "--frameworks",
                          "ding", "--seeds", "0", "--short", "5", "--long", "15"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ding       median" in out.stdout and "s CPU per 1,000 iterations" in out.stdout
