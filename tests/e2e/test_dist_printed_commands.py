"""The role commands ``ding -m dist --module config`` prints work as printed: the roles find the coordinator through
the address file it writes once it listens (its port is chosen only then), whichever starts first."""
from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from ._parallel import ding_cmd, processes_mentioning, read_log, result, start, write_config


@pytest.mark.timeout(200)
def test_the_printed_role_commands_run_the_experiment(workdir):
    exp = "printed"
    env = {"DING_AUTH_TOKEN": "p" * 32}
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9},
                                           "policy": {"collect": {"collector": {"collector_num": 1}}}})
    out = subprocess.run(ding_cmd("-m", "dist", "--module", "config", "-c", cfg), cwd=str(workdir),
                         capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert out.returncode == 0, out.stdout + out.stderr
    commands = [shlex.split(line.strip()) for line in out.stdout.splitlines() if line.strip().startswith("ding -m")]
    assert [c[4] for c in commands] == ["coordinator", "learner", "collector"], out.stdout
    as_printed = [ding_cmd(*c[1:]) for c in commands]
    roles = [start(cmd, workdir, env=env, log_name=f"{cmd[6]}.log") for cmd in as_printed[1:]]  # before it
    coordinator = start(as_printed[0] + ["--env-step", "300"], workdir, env=env)
    assert coordinator.wait(timeout=150) == 0, read_log(workdir)
    for cmd, proc in zip(as_printed[1:], roles):
        assert proc.wait(timeout=60) == 0, read_log(workdir, f"{cmd[6]}.log")
    r = result(workdir, exp)
    assert r["env_step"] >= 300 and r["error"] is None and r["train_iter"] > 0, r
    assert not processes_mentioning(str(workdir))
    assert "coordinator.json" in out.stdout  # the printed note says where the roles look
