"""Smoke run of the parallel benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_bench_parallel_smoke(capsys):
    module = load_bench_module("bench_parallel")
    out = module.main(["--smoke"])
    modes = {(r["mode"], r["collectors"]) for r in out}
    assert modes == {("serial", 0), ("parallel", 2)}
    for rec in out:
        assert rec["runs"][0]["train_iter"] >= 60 and rec["env_steps_per_s"] > 0
    assert "env steps/s" in capsys.readouterr().out
