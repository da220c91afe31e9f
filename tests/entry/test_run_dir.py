"""A run owns its directory: runs started together never share one, a locked run refuses a second user, and a
failed resume leaves every file of the run as it was."""
from __future__ import annotations

import hashlib
import os
import re
import select
import subprocess
import sys
import time

import pytest

from ding.engine.training_view import read_eval_csv
from ding.entry import serial_pipeline
from ding.utils import CheckpointError

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CONFIG = """
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config, create_config
main_config.exp_name = 'same'
main_config.policy.learn.learner = dict(
    import_names=['tests.entry._plugins'],
    hook=dict(log_show_after_iter=100000,
              slow=dict(name='slow', type='test_slow_down', position='after_iter', priority=50,
                        ext_args=dict(seconds=0.01))),
)
"""

# Imports everything first, says so on the ready pipe, then waits for the common start time the test sends on the go
# pipe, so the runs really start at the same moment however long each one's imports took.
_AT_ONCE = """
import os, sys, time
import ding.entry.serial_entry
from ding.entry.cli import main
ready, go = int(sys.argv[1]), int(sys.argv[2])
os.write(ready, b"1")
os.close(ready)
start = float(os.read(go, 64).decode())
os.close(go)
time.sleep(max(0.0, start - time.time()))
sys.exit(main(sys.argv[3:]))
"""


def _start_together(argv_list: list[list[str]], cwd: str) -> list[tuple[int, str, int]]:
    """Run the ``ding`` commands at one moment, once every process has done its imports; return ``(returncode,
    output, pid)`` of each."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    procs, readies, gos = [], [], []
    try:
        for argv in argv_list:
            ready_r, ready_w = os.pipe()
            go_r, go_w = os.pipe()
            readies.append(ready_r)
            gos.append(go_w)
            try:
                procs.append(subprocess.Popen([sys.executable, "-c", _AT_ONCE, str(ready_w), str(go_r), *argv],
                                              cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                              text=True, pass_fds=(ready_w, go_r)))
            finally:
                os.close(ready_w)
                os.close(go_r)
        for p, ready in zip(procs, readies):
            if not select.select([ready], [], [], 120)[0]:
                pytest.fail("a ding process did not finish its imports within 120 s")
            if os.read(ready, 1) != b"1":  # it closed the pipe without a word: it ended during its imports
                pytest.fail(f"a ding process ended before it was ready:\n{p.communicate(timeout=60)[0]}")
        start = str(time.time() + 0.2).encode()
        for go in gos:
            os.write(go, start)
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=300)
            results.append((p.returncode, out, p.pid))
    finally:
        for fd in readies + gos:
            os.close(fd)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


def _tree_digest(path: str) -> dict[str, str]:
    """Every file (by content hash) and directory under ``path``."""
    digest = {}
    for root, dirs, files in os.walk(path):
        for d in dirs:
            digest[os.path.relpath(os.path.join(root, d), path)] = "<dir>"
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                digest[os.path.relpath(os.path.join(root, name), path)] = hashlib.sha256(f.read()).hexdigest()
    return digest


@pytest.mark.parametrize("attempt", range(3))
def test_two_runs_started_together_get_two_directories(in_tmp_dir, attempt):
    (in_tmp_dir / "same.py").write_text(_CONFIG)
    cmd = ["-m", "serial", "-c", "same.py", "--train-iter", "60"]
    results = _start_together([cmd, cmd], str(in_tmp_dir))
    for rc, out, _ in results:
        assert rc == 0, out
    dirs = sorted(d for d in os.listdir(in_tmp_dir) if os.path.isdir(d))
    assert len(dirs) == 2 and dirs[0] == "same" and re.fullmatch(r"same_\d{6}_\d{6}(_\d+)?", dirs[1])
    for d in dirs:
        result = read_result(d)
        assert result["exp_name"] == d and result["train_iter"] == 60
        iters = [r["train_iter"] for r in read_eval_csv(os.path.join(d, "log", "eval.csv"))]
        assert iters == sorted(set(iters))  # one run's evaluations, not two interleaved
        with open(os.path.join(d, "total_config.py")) as f:
            assert f"'exp_name': '{d}'" in f.read()


@pytest.mark.parametrize("attempt", range(3))
def test_two_resumes_of_one_run_one_is_refused(in_tmp_dir, attempt):
    (in_tmp_dir / "same.py").write_text(_CONFIG)
    serial_pipeline("same.py", seed=0, max_train_iter=20)
    cmd = ["-m", "serial", "-c", "same.py", "--train-iter", "200", "--resume"]
    results = sorted(_start_together([cmd, cmd], str(in_tmp_dir)))
    (ok_rc, ok_out, ok_pid), (refused_rc, refused_out, _) = results
    assert ok_rc == 0, ok_out
    assert refused_rc == 1, refused_out
    assert refused_out.strip() == (
        f"ding: LockError: 'same' is in use by another ding run (pid {ok_pid}; lock file same/.lock); two processes "
        "cannot write one run: wait for it to end (Ctrl-C stops it with a checkpoint), or give another run's "
        "directory with --exp-name")
    assert read_result("same")["train_iter"] == 200
    assert sorted(os.listdir(in_tmp_dir)) == ["same", "same.py"]  # the refused resume made no directory either


def _shape_changed(main, create):
    main.policy.model.encoder_hidden_size_list = [64, 64, 32]


def _env_count_changed(main, create):  # fits the policy; fails while the collector's state is restored
    main.env.collector_env_num = 4


def _buffer_size_changed(main, create):  # fails while the replay buffer's state is restored
    main.policy.other.replay_buffer.replay_buffer_size = 1000


@pytest.mark.parametrize("change, error, match", [
    (_shape_changed, CheckpointError,
     r"(?s)iteration_20.pth.tar.*does not fit the policy.*checkpoint shape \(128, 4\) != model shape \(64, 4\)"),
    (_env_count_changed, CheckpointError, "the state has 8 envs, this collector has 4"),
    (_buffer_size_changed, CheckpointError, "saved with replay_buffer_size=20000 but this buffer has 1000"),
])
def test_failed_resume_leaves_every_file_of_the_run_byte_identical(in_tmp_dir, cartpole_dqn, change, error, match):
    serial_pipeline(cartpole_dqn("run"), seed=0, max_train_iter=20)
    before = _tree_digest("run")
    main, create = cartpole_dqn("run")
    change(main, create)
    with pytest.raises(error, match=match):
        serial_pipeline((main, create), seed=0, max_train_iter=40, resume=True)
    assert _tree_digest("run") == before
    assert os.listdir(in_tmp_dir) == ["run"]
    # the run still resumes with its own config
    serial_pipeline(cartpole_dqn("run"), seed=0, max_train_iter=40, resume=True)
    assert read_result("run")["train_iter"] == 40
