"""The PettingZoo side-by-side benchmark's bookkeeping (its runs take many minutes: `bench_ptz_simple_spread.py`)."""
from __future__ import annotations

import argparse

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
