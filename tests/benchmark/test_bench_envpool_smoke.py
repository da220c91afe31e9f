"""Smoke run of the envpool ceiling benchmark so it never rots (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import importlib.util

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
@pytest.mark.skipif(importlib.util.find_spec("envpool") is None or importlib.util.find_spec("mujoco") is None,
                    reason="needs the envpool and mujoco extras (pip install -e '.[mujoco,envpool]')")
def test_bench_envpool_smoke(capsys):
    result = load_bench_module("bench_envpool").main(["--smoke"])
    assert set(result["median_steps_per_s"]) == {"ceiling", "env_pool", "base"}
    assert all(v > 0 for v in result["median_steps_per_s"].values())
    assert "x the ceiling" in capsys.readouterr().out
