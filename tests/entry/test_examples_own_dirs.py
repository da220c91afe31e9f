"""Issue #22 item 2: the hand-built example never writes into an earlier run's directory.

``entry/cartpole_dqn_main.py`` is run twice (real processes, small iteration limit), after a CLI run of the same
config (same ``exp_name``); every file of every earlier run must stay byte-identical, and each run gets its own
directory. Workers built by hand on a directory another run holds or held are refused with one line.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from ding.utils import LockError, WorkerLogs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "entry", "cartpole_dqn_main.py")
RUN_EXAMPLE = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('example', sys.argv[1]); "
               "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); m.main(max_iterations=20)")


def _snapshot(root: str) -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _run(cmd: list[str], cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def test_example_twice_after_a_cli_run_leaves_earlier_runs_byte_identical(tmp_path):
    _run([sys.executable, "-m", "ding", "-m", "serial", "-c", os.path.join(ROOT, "config", "serial", "cartpole_dqn.py"),
          "--train-iter", "20"], tmp_path)
    runs = {d for d in os.listdir(tmp_path)}
    assert runs == {"cartpole_dqn_seed0"}
    before = _snapshot(str(tmp_path))
    for attempt in range(2):
        proc = _run([sys.executable, "-c", RUN_EXAMPLE, EXAMPLE], tmp_path)
        assert "asked for" not in proc.stdout + proc.stderr  # no empty-buffer message at the start
        now = _snapshot(str(tmp_path))
        for path, digest in before.items():
            assert now.get(path) == digest, f"run {attempt + 2} changed {path}"
        new_dirs = set(os.listdir(tmp_path)) - runs
        assert len(new_dirs) == 1, new_dirs  # its own directory, cartpole_dqn_seed0_<YYMMDD_HHMMSS>
        (new,) = new_dirs
        assert new.startswith("cartpole_dqn_seed0_")
        assert os.path.isfile(tmp_path / new / "total_config.py")
        assert os.path.isfile(tmp_path / new / "log" / "learner" / "learner_logger.txt")
        runs.add(new)
        before = now


def test_hand_built_worker_on_an_earlier_runs_directory_is_refused(in_tmp_dir):
    from ding.config import claim_run_dir

    with claim_run_dir("earlier") as run:
        assert run.path == "earlier"
    with pytest.raises(LockError) as info:
        WorkerLogs("earlier", "learner")
    msg = str(info.value)
    assert "'earlier' belongs to an earlier ding run" in msg and "claim_run_dir" in msg
    assert "\n" not in msg
    logs = WorkerLogs("fresh", "learner")  # a new directory: claimed and locked by this process
    logs.close()
    assert os.path.isfile(os.path.join("fresh", ".lock"))
