"""The PettingZoo side-by-side benchmark's bookkeeping (its runs take many minutes: `bench_ptz_simple_spread.py`)."""
from __future__ import annotations

import argparse

import numpy as np

from tests.di_engine_files import copy_di_engine_file

from ._bench_loader import load_bench_module


def test_time_to_target_and_di_engines_return_scale(tmp_path, capsys):
    bench = load_bench_module("bench_ptz_simple_spread")
    curve = [[0, 20.0, -190.0], [32000, 170.0, -151.0], [64000, 340.0, -140.0]]
    assert bench.first_reach(curve, -150.0) == (64000, 340.0)
    assert bench.first_reach(curve, -100.0) == (None, None)
    cfg = copy_di_engine_file(bench.config_path("mappo"), str(tmp_path))
    shifted = bench.on_dings_scale({"curve": [[0, 25.0, -250.0]], "wall": 30.0}, cfg)
    assert shifted["return_offset"] == 75.0 and shifted["curve"] == [[0, 25.0, -175.0]]  # 3 agents x 25 cycles
    rows = [bench.summarize("ding", "mappo", 0, {"curve": curve, "wall": 400.0}, -150.0),
            bench.summarize("di-engine", "mappo", 0, {"curve": [[0, 25.0, -175.0], [64000, 500.0, -149.0]],
                                                      "wall": 520.0}, -150.0)]
    assert rows[0]["env_step_to_target"] == 64000 and rows[0]["best_return"] == -140.0
    bench.report(rows, argparse.Namespace(algo="mappo", target=-150.0, env_step=96000, seeds=[0], plot=None))
    assert "wall-time ratio ding / DI-engine (medians): 0.68x" in capsys.readouterr().out


class _FixedSeedEnv:
    """DI-engine 0.5.3's PettingZooEnv's seeding, as it ships: ``seed`` keeps ``dynamic_seed``, ``reset`` ignores it."""

    def seed(self, seed, dynamic_seed=True):
        self._seed, self._dynamic_seed = seed, dynamic_seed

    def reset(self):
        return self._seed  # the seed the PettingZoo env is reset with: it decides the start state


def test_fresh_starts_gives_dynamically_seeded_envs_a_new_start_per_episode():
    bench = load_bench_module("bench_ptz_simple_spread")
    shipped = _FixedSeedEnv()
    shipped.seed(3)
    assert {shipped.reset() for _ in range(5)} == {3}  # as shipped: one start all run long

    class Patched(_FixedSeedEnv):
        pass

    bench.fresh_starts(Patched)
    collector, evaluator = Patched(), Patched()
    collector.seed(3)
    evaluator.seed(3, dynamic_seed=False)
    np.random.seed(0)
    starts = [collector.reset() for _ in range(20)]
    assert len(set(starts)) > 10 and all(s != 3 and (s - 3) % 100 == 0 for s in starts)  # DI-engine's convention
    assert collector._seed == 3  # the env's own seed is kept
    assert {evaluator.reset() for _ in range(5)} == {3}  # the evaluator keeps its fixed episodes


def test_eval_starts_runs_ding_with_fixed_collector_seeds():
    bench = load_bench_module("bench_ptz_simple_spread")
    native = bench.ding_command("f.py", 1, 64000, True, "native")
    assert native[1:] == ["-m", "ding.entry.cli", "-m", "serial_onpolicy", "-c", "f.py", "-s", "1", "--env-step",
                          "64000"]
    assert bench.ding_command("f.py", 1, 64000, True, "fresh") == native  # ding's collectors draw fresh starts
    pinned = bench.ding_command("f.py", 1, 64000, True, "eval")
    assert "serial_pipeline_onpolicy" in pinned[2] and "dynamic_seed=False" in pinned[2]
    assert pinned[3:] == ["f.py", "1", "64000"]
    assert "serial_pipeline as run" in bench.ding_command("f.py", 1, 64000, False, "eval")[2]


def test_a_ding_worker_imports_this_checkout_and_a_di_engine_worker_its_own_venv(tmp_path, monkeypatch):
    bench = load_bench_module("bench_ptz_simple_spread")
    fake = tmp_path / "python"  # stands in for an interpreter: reports the PYTHONPATH it was started with
    fake.write_text('#!/bin/sh\necho "{\\"pythonpath\\": \\"$PYTHONPATH\\"}"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    assert bench.run_isolated(str(fake), ["ding", "mappo"], 30) == {"pythonpath": bench.ROOT}
    assert bench.run_isolated(str(fake), ["di-engine", "mappo"], 30) == {"pythonpath": ""}
