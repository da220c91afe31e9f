"""Smoke run of the hand-built loop benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_handbuilt_loop_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = load_bench_module("bench_handbuilt_loop").main(["--smoke", "--json", str(tmp_path / "out.json")])
    assert result["bench"] == "handbuilt_loop" and result["iterations"] == 20
    # the child processes set nothing: the first worker they built applied ding's default of one thread
    assert result["threads"] == {"ding": 1}
    assert set(result["median_wall_s"]) == {"quiet/ding", "busy/ding"}
    assert all(w > 0 for w in result["median_wall_s"].values()) and result["busy_over_quiet_ding"] > 0
    assert "busy/quiet" in capsys.readouterr().out and (tmp_path / "out.json").stat().st_size > 0
