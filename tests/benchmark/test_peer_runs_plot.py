"""The learning benchmarks' plots: drawn here, or through a peer interpreter when matplotlib is not importable."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from ._bench_loader import load_bench_module

pytest.importorskip("matplotlib")  # the `test` extra has it; the peer path below needs it in that interpreter too

LINES = [dict(label="ding seed 0", seed=0, dashed=False, curve=[[0, 1.0, 10.0], [5000, 60.0, 800.0]]),
         dict(label="sb3 seed 0", seed=0, dashed=True, curve=[[0, 2.0, 12.0], [5000, 90.0, 1200.0]])]


def _is_png(path) -> bool:
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_curves_are_drawn_here(tmp_path):
    peer = load_bench_module("_peer_runs")
    out = tmp_path / "here.png"
    assert peer.draw_curves(LINES, str(out), "t", "return", [(1000.0, "--")], python=None) == str(out)
    assert _is_png(out)


def test_curves_are_drawn_by_the_peer_interpreter_when_matplotlib_is_missing_here(tmp_path, monkeypatch):
    peer = load_bench_module("_peer_runs")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert "no plot" in peer.draw_curves(LINES, str(tmp_path / "none.png"), "t", "r", [], python=None)
    out = tmp_path / "peer.png"
    assert peer.draw_curves(LINES, str(out), "t", "return", [(1000.0, "--"), (11.5, ":")],
                            python=sys.executable) == str(out)  # a separate process runs _peer_runs.py --plot-from
    assert _is_png(out)
