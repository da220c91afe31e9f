"""Smoke run of the serial DQN benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import importlib.util
import os

import pytest


@pytest.mark.benchmark
def test_bench_serial_dqn_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_serial_dqn.py")
    spec = importlib.util.spec_from_file_location("bench_serial_dqn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    collector, training = module.main(["--smoke"])
    assert collector["bench"] == "collector" and collector["ding_steps_per_s"] > 0 and collector["ratio"] > 0
    # both ceilings are printed; they are separate timings, so no order between them is asserted (noisy machines)
    assert collector["ceiling_raw_steps_per_s"] > 0 and collector["ceiling_steps_per_s"] > 0
    assert training["bench"] == "serial_dqn_cartpole" and training["runs"][0]["env_step"] >= 300
    assert "collector (8 envs)" in capsys.readouterr().out
