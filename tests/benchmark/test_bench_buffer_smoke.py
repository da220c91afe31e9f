"""Smoke run of the replay-buffer benchmark so it never rots (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import json

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_buffer_smoke(capsys):
    results = load_bench_module("bench_buffer").main(["--smoke"])
    impls = {r["impl"] for r in results if r["bench"] == "buffer"}
    assert impls == {"deque + random.sample", "numpy O(N) prioritized", "ding naive", "ding advanced"}
    assert all(r["per_s"] > 0 for r in results if r["bench"] == "buffer")
    assert len([r for r in results if r["bench"] == "buffer"]) == 12  # 4 implementations x 3 operations
    ratios = next(r for r in results if r["bench"] == "buffer_ratios")
    assert {"advanced_vs_numpy_per_cycle", "advanced_cycle_vs_di_engine_600"} <= set(ratios)
    out = capsys.readouterr().out
    json_lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert json_lines == results
    assert "sample+update/s" in out
