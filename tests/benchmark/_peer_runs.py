"""Shared by the benchmarks that run ding next to peer frameworks (Stable-Baselines3, Tianshou): one training run
per process, and the search for an interpreter that imports the peers.

The peers are never project dependencies: they live in a separate venv whose interpreter is passed as
``--peer-python`` (or ``$DING_BENCH_PEER_PYTHON``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_worker(script: str, framework: str, python: str, worker_args: Sequence[str], timeout: float) -> dict:
    """``python script --worker framework *worker_args`` in a fresh process (one torch/OpenMP thread) and a temporary
    directory; returns the last JSON line it printed. A failed run raises with the tail of its output."""
    cmd = [python, os.path.abspath(script), "--worker", framework, *worker_args]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", DING_TORCH_THREADS="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{framework} run failed ({' '.join(worker_args)}):\n{proc.stdout[-2000:]}\n"
                           f"{proc.stderr[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{framework} run printed no JSON result ({' '.join(worker_args)}):\n{proc.stdout[-2000:]}")
    return json.loads(lines[-1])


def find_peer_python(given: str | None, modules: Sequence[str]) -> tuple[str | None, str]:
    """The interpreter that imports every one of ``modules``: ``given``, ``$DING_BENCH_PEER_PYTHON``, or this one;
    ``(None, note)`` when none does."""
    candidates = [p for p in (given, os.environ.get("DING_BENCH_PEER_PYTHON"), sys.executable) if p]
    probe_src = "import " + ", ".join(modules)
    for python in candidates:
        try:
            probe = subprocess.run([python, "-c", probe_src], capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return python, ""
    return None, (f"peer columns skipped: no interpreter here imports {' and '.join(modules)} (install them in a "
                  "separate venv and pass --peer-python)")
