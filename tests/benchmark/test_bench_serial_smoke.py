"""Smoke run of the serial DQN benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_serial_dqn_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = load_bench_module("bench_serial_dqn")
    collector, training = module.main(["--smoke"])
    assert collector["bench"] == "collector" and collector["ding_steps_per_s"] > 0 and collector["ratio"] > 0
    # both ceilings are printed; they are separate timings, so no order between them is asserted (noisy machines)
    assert collector["ceiling_raw_steps_per_s"] > 0 and collector["ceiling_steps_per_s"] > 0
    assert training["bench"] == "serial_dqn_cartpole" and training["runs"][0]["env_step"] >= 300
    assert "collector (8 envs)" in capsys.readouterr().out
