"""Smoke run of the Pendulum SAC benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_pendulum_sac_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = load_bench_module("bench_pendulum_sac").main(["--smoke", "--no-peers"])
    assert summary["bench"] == "pendulum_sac_summary" and summary["stop_value"] == -250
    assert summary["ding"]["median_env_step"] >= 700 and summary["ding"]["median_wall_s"] > 0
    assert summary["note"] == "peer columns skipped (--no-peers)"
    out = capsys.readouterr().out
    assert "ding       median wall" in out and '"framework": "ding"' in out


def test_summary_ratio_is_ding_over_the_fastest_peer():
    bench = load_bench_module("bench_pendulum_sac")
    runs = [dict(framework=fw, seed=s, wall_s=w, env_step=e, updates=1, reached=True, eval_return=-200.0)
            for fw, s, w, e in [("ding", 0, 4.0, 2000), ("ding", 1, 6.0, 2400), ("ding", 2, 5.0, 2200),
                                ("sb3", 0, 30.0, 3000), ("tianshou", 0, 20.0, 9000)]]
    summary = bench.summarize(runs)
    assert summary["ding"] == {"median_wall_s": 5.0, "median_env_step": 2200, "reached": "3/3"}
    assert summary["ding_wall_vs_fastest_peer"] == 0.25


def test_without_peers_the_note_says_how_to_add_them(monkeypatch):
    bench = load_bench_module("bench_pendulum_sac")
    monkeypatch.setenv("DING_BENCH_PEER_PYTHON", "/nonexistent/python")
    monkeypatch.setattr(bench.sys, "executable", "/nonexistent/python")
    python, note = bench.find_peer_python(None)
    assert python is None and "--peer-python" in note
