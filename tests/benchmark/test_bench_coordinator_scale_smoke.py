"""The coordinator scale benchmark: its soak verdict (default suite), and a smoke-sized run (slow: it starts a
coordinator, a learner and collector processes; figures are not asserted, machines are noisy)."""
from __future__ import annotations

import pytest

from ._bench_loader import load_bench_module

CLEAN = {"collectors": 4, "collectors_started": 4, "request_errors": 0, "lost_collector": 0,
         "failed_collector_tasks": 0, "malformed_answers": 0, "fatal_error": None, "threads": [40, 41, 42],
         "fds": [30, 31, 33], "rss_mb": [300.0, 310.0, 311.0]}


def test_soak_verdict_names_every_unclean_sign():
    verdict = load_bench_module("bench_coordinator_scale").soak_verdict
    assert verdict(CLEAN) == []
    bad = dict(CLEAN, request_errors=3, lost_collector=1, collectors_started=3, threads=[40, 60, 60],
               fds=[30, 90, 90], rss_mb=[300.0, 500.0, 500.0], fatal_error="boom")
    text = "; ".join(verdict(bad))
    for sign in ("request_errors = 3", "lost_collector = 1", "only 3 of 4", "threads grew", "fds grew", "RSS grew",
                 "boom"):
        assert sign in text, (sign, text)


@pytest.mark.slow
@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_bench_coordinator_scale_smoke(capsys):
    rows = load_bench_module("bench_coordinator_scale").main(["--smoke"])
    (row,) = rows
    assert row["collectors_started"] == 4 and row["collect_tasks_per_s"] > 0 and row["fatal_error"] is None, row
    assert "| collectors | collect tasks/s" in capsys.readouterr().out
