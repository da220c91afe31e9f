"""Smoke run of the CLI start-up benchmark so it never rots (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import importlib.util
import os

import pytest


@pytest.mark.benchmark
def test_bench_cli_start_smoke(capsys):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_cli_start.py")
    spec = importlib.util.spec_from_file_location("bench_cli_start", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--smoke"])
    assert [r["command"] for r in results] == ["python -c pass", "ding --help", "ding -m serial --help",
                                               "python -c 'import torch'"]
    assert all(r["median_s"] > 0 and r["repeats"] == 2 for r in results)
    assert "minus python -c pass" in capsys.readouterr().out
