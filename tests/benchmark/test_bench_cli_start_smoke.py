"""Smoke run of the CLI start-up benchmark so it never rots (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_cli_start_smoke(capsys):
    module = load_bench_module("bench_cli_start")
    results = module.main(["--smoke"])
    assert [r["command"] for r in results] == ["python -c pass", "ding --help", "ding -m serial --help",
                                               "python -c 'import torch'"]
    assert all(r["median_s"] > 0 and r["repeats"] == 2 for r in results)
    assert "minus python -c pass" in capsys.readouterr().out
