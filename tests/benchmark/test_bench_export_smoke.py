"""Smoke run of the export benchmark so it never rots (latencies are not asserted: machines are noisy)."""
from __future__ import annotations

import importlib.util
import json

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_export_smoke(capsys):
    if not all(importlib.util.find_spec(m) for m in ("onnx", "onnxscript", "onnxruntime")):
        pytest.skip("needs the onnx extra: pip install -e '.[onnx]'")
    results = load_bench_module("bench_export").main(["--smoke"])
    assert [(r["case"], r["format"]) for r in results] == [("dqn", "onnx"), ("dqn", "torchscript")]
    for r in results:
        assert r["n_obs"] == 100 and r["mismatch"] == 0 and r["max_abs_diff"] <= 1e-5
        assert r["size_kb"] > 1 and r["single_action_us"] > 0 and r["batch1_us"] > 0 and r["batchN_us"] > 0
    out = capsys.readouterr().out
    assert [json.loads(line) for line in out.splitlines() if line.startswith("{")] == results
