"""Smoke run of bench_algos (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import json
import os

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_algos_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = load_bench_module("bench_algos")
    results = module.main(["--smoke", "--out", "curve.png"])
    run, summary = results
    assert run["config"] == "cartpole_ppo" and run["impl"] == "ding" and run["env_step"] > 0
    assert run["budget"] == module.read_budgets()["cartpole_ppo"]["budget"]
    assert summary["bench"] == "algo_summary" and summary["within_budget"] in ("0/1", "1/1")
    out = capsys.readouterr().out
    assert "median env steps" in out and "note: --smoke" in out
    lines = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
    assert [ln["bench"] for ln in lines] == ["algo", "algo_summary"]
    assert os.path.getsize("curve.png") > 1000
