"""``ding -m dist -P slurm`` on a real single-node Slurm cluster (``make test-slurm``): every role an srun step,
the run reaches CartPole's stop value, an sbatch job runs its roles as steps of the job, Ctrl-C ends the run in
order -- and afterwards Slurm lists no job or step and no role process is left."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.e2e._parallel import (
    ding_cmd,
    eval_rows,
    processes_mentioning,
    read_log,
    result,
    start,
    wait_for,
    write_config,
)

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(420)]


def _squeue(env: dict, steps: bool = False) -> list[str]:
    out = subprocess.run(["squeue", "-h", *(["-s"] if steps else []), "-o", "%i %j"], env=env, capture_output=True,
                         text=True, timeout=30, check=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def _nothing_left(env: dict, cwd) -> None:
    left = wait_for(lambda: not _squeue(env) and not _squeue(env, steps=True), 30, "Slurm's queue to empty")
    assert left
    wait_for(lambda: not processes_mentioning(str(cwd)), 30, "the role processes to exit")


@pytest.fixture
def slurm_env(slurm_cluster):
    return dict(os.environ, **slurm_cluster)


@pytest.fixture
def workdir(tmp_path, slurm_env):
    yield tmp_path
    jobs = _squeue(slurm_env)
    if jobs:  # a failed test: cancel what it left, and say so
        subprocess.run(["scancel", *[j.split()[0] for j in jobs]], env=slurm_env, timeout=30)
    left = processes_mentioning(str(tmp_path))
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not jobs and not left, f"left behind: jobs {jobs}, processes {left}"


@pytest.mark.convergence
def test_cartpole_reaches_the_stop_value_as_slurm_steps(workdir, slurm_env):
    exp = "slurmconv"
    cfg = write_config(workdir, exp)
    t0 = time.monotonic()
    out = subprocess.run(ding_cmd("-m", "dist", "-P", "slurm", "-c", cfg), cwd=str(workdir), env=slurm_env,
                         capture_output=True, text=True, timeout=360)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    r = result(workdir, exp)
    assert r["stop_flag"] is True and r["best_eval_return"] >= 195 and r["mode"] == "dist", r
    assert "on Slurm: 4 steps in new Slurm jobs" in log and "reached the stop value" in log, log
    for role in ("learner0", "collector0", "collector1"):  # each ran as a step: its srun line heads its log
        text = read_log(os.path.join(str(workdir), exp, "log", role), "process.log")
        assert text.startswith("ding: srun --job-name=ding-") and f"--module-name {role}" in text, text[:500]
    _nothing_left(slurm_env, workdir)
    print(f"Slurm CartPole DQN: {time.monotonic() - t0:.1f} s to the stop value, {r['env_step']} env steps")


def test_sbatch_job_runs_every_role_as_a_step_of_it(workdir, slurm_env):
    exp = "slurmbatch"
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9}})
    script = os.path.join(str(workdir), "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --ntasks=4\n#SBATCH --cpus-per-task=1\n"
                f"exec {' '.join(ding_cmd('-m', 'dist', '-P', 'slurm', '-c', cfg, '--env-step', '300'))}\n")
    out = subprocess.run(["sbatch", "--wait", f"--output={workdir}/job.out", f"--chdir={workdir}", script],
                         cwd=str(workdir), env=slurm_env, capture_output=True, text=True, timeout=360)
    log = read_log(workdir, "job.out")
    assert out.returncode == 0, out.stdout + out.stderr + log
    assert "4 steps in job" in log, log
    r = result(workdir, exp)
    assert r["env_step"] >= 300 and "max_env_step" in r["end_reason"] and r["error"] is None, r
    learner_log = read_log(os.path.join(str(workdir), exp, "log", "learner0"), "process.log")
    assert "--jobid=" in learner_log.splitlines()[0] and "--exact" in learner_log.splitlines()[0], learner_log[:400]
    _nothing_left(slurm_env, workdir)


def test_ctrl_c_ends_the_run_in_order_and_cancels_every_step(workdir, slurm_env):
    exp = "slurmint"
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9}})
    proc = start(ding_cmd("-m", "dist", "-P", "slurm", "-c", cfg), workdir, env=slurm_env)
    try:
        wait_for(lambda: eval_rows(workdir, exp) >= 2, 240, "two evaluations", proc=proc)
        assert len(_squeue(slurm_env)) == 4  # the coordinator, the learner and two collectors: one job each
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=150) == 130, read_log(workdir)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    r = result(workdir, exp)
    assert r["interrupted"] is True, r
    assert any(f.startswith("iteration_") for f in os.listdir(os.path.join(str(workdir), exp, "ckpt")))
    assert "every step it started has ended" in read_log(workdir)
    _nothing_left(slurm_env, workdir)
