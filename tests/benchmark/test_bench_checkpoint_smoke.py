"""Smoke run of the checkpoint run-state benchmark so it never rots (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import json

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_checkpoint_smoke(capsys):
    results = load_bench_module("bench_checkpoint").main(["--smoke"])
    assert [(r["items"], r["kind"]) for r in results] == [(200, "numpy"), (200, "tensor")]
    for r in results:
        assert r["ding_save_s"] > 0 and r["torch_save_s"] > 0 and r["ding_load_s"] > 0 and r["torch_load_s"] > 0
        assert r["save_ratio"] > 0 and r["load_ratio"] > 0 and r["ding_mb"] >= 0
    out = capsys.readouterr().out
    assert [json.loads(line) for line in out.splitlines() if line.startswith("{")] == results
    assert "pack_extra" in out and "torch.save" in out
