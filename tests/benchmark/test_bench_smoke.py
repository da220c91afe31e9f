"""Smoke runs of the speed benchmarks so they never rot (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import importlib.util
import json
import multiprocessing as mp
import os

import pytest


def _load(name: str):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.benchmark
def test_bench_env_manager_smoke(capsys):
    results = _load("bench_env_manager").main(["--smoke"])
    names = [r["name"] for r in results]
    assert names == ["SyncVectorEnv", "AsyncVectorEnv", "base", "subprocess", "async_subprocess"]
    assert all(r["env_steps_per_s"] > 0 and r["smoke"] for r in results)
    assert all(r["ratio_to_sync_vector_env"] > 0 for r in results if r["name"] in ("base", "subprocess"))
    assert "ratio_to_async_vector_env" in results[3] and "ratio_to_async_vector_env" not in results[2]
    out = capsys.readouterr().out
    assert [json.loads(line) for line in out.splitlines() if line.startswith("{")] == results
    assert "x SyncVectorEnv" in out
    assert mp.active_children() == []
