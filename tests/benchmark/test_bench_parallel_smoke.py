"""Smoke run of the parallel benchmark (figures are not asserted: machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module


@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_bench_parallel_smoke(capsys):
    module = load_bench_module("bench_parallel")
    out = module.main(["--smoke"])
    assert [(r["mode"], r["collectors"], r["step_cost"]) for r in out] == [
        ("serial", 0, None), ("parallel", 2, None), ("parallel", 2, (2.0, "cpu"))]
    for rec, iters in zip(out, (60, 60, 30)):
        assert rec["runs"][0]["train_iter"] >= iters and rec["env_steps_per_s"] > 0
    # a parallel run's learner reports its own speed while it had a batch; a serial run has none
    assert out[0]["runs"][0]["learner_busy_iters_per_s"] is None
    assert out[1]["runs"][0]["learner_busy_iters_per_s"] > 0
    assert "env steps/s" in capsys.readouterr().out
    summary = module.summary([dict(out[0], bench="parallel_throughput")])
    assert "(a) throughput" in summary


@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_update_only_reference_trains_the_configs_update():
    module = load_bench_module("bench_parallel")
    rate = module.update_only_rate(20, [0])
    assert rate > 0
    line = module.summary([{"bench": "parallel_learner_rate", "label": "parallel learner, busy (paced run)",
                            "iters_per_s": 0.5 * rate, "update_only_iters_per_s": rate, "ratio": 0.5}])
    assert "target >= 0.8x: NOT met" in line


@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_learner_ceiling_runs_the_update_alone_and_beside_the_collectors_work():
    module = load_bench_module("bench_parallel")
    rec, = module.learner_ceiling(20, [0])
    assert len(rec["alone"]) == 1 and len(rec["beside"]) == 1  # one of each per seed
    assert rec["iters_per_s"] > 0 and rec["ratio"] == rec["iters_per_s"] / rec["update_only_iters_per_s"]
    assert "(e) learner ceiling" in module.summary([rec])


def test_repeats_take_medians_over_every_round_and_keep_each_rounds_ratio(monkeypatch):
    module = load_bench_module("bench_parallel")
    # made-up runs: serial takes 10 s on every seed; parallel 5 s, except two slow runs in the second round
    slow = {("parallel", 1, 1), ("parallel", 2, 1)}
    calls = []

    def fake_run(setup, seed):
        rep = sum(1 for c in calls if c == (setup.mode, seed))
        calls.append((setup.mode, seed))
        t = 10.0 if setup.mode == "serial" else (50.0 if (setup.mode, seed, rep) in slow else 5.0)
        return {"time_to_stop_s": t, "env_step_to_stop": 1000, "wall_s": t + 1, "stop_flag": True}

    monkeypatch.setattr(module, "run", fake_run)
    serial, parallel = module.to_stop(module.SETUPS["b"], [0, 1, 2], repeats=2)
    assert calls[:2] == [("serial", 0), ("parallel", 0)] and len(calls) == 12  # one seed's setups back to back
    # the line's median is over all six runs (5, 5, 5, 5, 50, 50); each round's ratio over its own three
    assert len(parallel["runs"]) == 6 and parallel["median_time_s"] == 5.0 and parallel["time_ratio"] == 0.5
    assert parallel["round_time_ratios"] == [0.5, 5.0]
    assert "rounds: 0.50x / 5.00x" in module.summary([serial, parallel])
    with pytest.raises(SystemExit):
        module.main(["--repeats", "0"])
