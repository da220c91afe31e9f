"""Smoke runs of the speed benchmarks so they never rot (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import json
import multiprocessing as mp

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
def test_bench_env_manager_smoke(capsys):
    results = load_bench_module("bench_env_manager").main(["--smoke"])
    names = [r["name"] for r in results]
    assert names == ["SyncVectorEnv", "AsyncVectorEnv", "base", "subprocess", "async_subprocess"]
    assert all(r["env_steps_per_s"] > 0 and r["smoke"] for r in results)
    assert all(r["ratio_to_sync_vector_env"] > 0 for r in results if r["name"] in ("base", "subprocess"))
    assert "ratio_to_async_vector_env" in results[3] and "ratio_to_async_vector_env" not in results[2]
    out = capsys.readouterr().out
    assert [json.loads(line) for line in out.splitlines() if line.startswith("{")] == results
    assert "x SyncVectorEnv" in out
    assert mp.active_children() == []
