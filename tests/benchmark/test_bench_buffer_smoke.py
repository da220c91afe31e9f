"""Smoke runs of the replay-buffer benchmark so it never rots (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import json
import sys

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
    assert {"advanced_vs_numpy_per_cycle", "advanced_vs_deque_cycle"} <= set(ratios)
    assert not any("di_engine" in key for key in ratios)  # no DI-engine interpreter given: no made-up ratio
    out = capsys.readouterr().out
    json_lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert json_lines == results
    assert "sample+update/s" in out and "DI-engine 0.5.3: not measured" in out


@pytest.mark.benchmark
def test_bench_buffer_peer_worker_protocol(capsys):
    """The DI-engine column's plumbing (subprocess, fill, interleaved measurements, ratios), exercised with this
    project's own interpreter standing in for DI-engine's: ding's buffer has DI-engine's API, so the worker runs."""
    results = load_bench_module("bench_buffer").main(["--smoke", "--no-baselines", "--clock", "cpu",
                                                      "--di-engine-python", sys.executable])
    rows = [r for r in results if r["bench"] == "buffer"]
    assert {r["impl"] for r in rows} == {"ding advanced", "DI-engine 0.5.3 advanced"}
    assert all(r["per_s"] > 0 for r in rows)
    ratios = next(r for r in results if r["bench"] == "buffer_ratios")
    assert ratios["advanced_vs_di_engine_cycle"] > 0 and len(ratios["advanced_vs_di_engine_cycle_runs"]) == 1
    assert ratios["clock"] == "cpu" and all(r["clock"] == "cpu" for r in rows)
    assert "DI-engine worker ready" in capsys.readouterr().out


def test_bench_buffer_rejects_a_missing_interpreter():
    with pytest.raises(ValueError, match="di-engine-python"):
        load_bench_module("bench_buffer").main(["--smoke", "--no-baselines", "--di-engine-python",
                                                "/nonexistent/python"])
