"""Smoke run of the parallel benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import importlib.util
import os

import pytest


@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_bench_parallel_smoke(capsys):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_parallel.py")
    spec = importlib.util.spec_from_file_location("bench_parallel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--smoke"])
    modes = {(r["mode"], r["collectors"]) for r in out}
    assert modes == {("serial", 0), ("parallel", 2)}
    for rec in out:
        assert rec["runs"][0]["train_iter"] >= 60 and rec["env_steps_per_s"] > 0
    assert "env steps/s" in capsys.readouterr().out
