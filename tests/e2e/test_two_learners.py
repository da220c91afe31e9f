"""Two learners through the LearnerAggregator, with real processes and real torch.distributed (gloo over loopback):
`ding -m parallel` with ``learner_num=2``. Both ranks log the sha256 of their final parameters; they must match.
A learner killed mid-run ends the run with one error naming it, and every process exits."""
from __future__ import annotations

import os
import re
import signal
import time

import pytest

from ._parallel import (
    FAST_FAULTS,
    ding_cmd,
    eval_rows,
    processes_mentioning,
    read_log,
    result,
    role_pid,
    start,
    wait_for,
    write_config,
)

_DIGEST = re.compile(r"final parameters sha256 ([0-9a-f]{64}) at train_iter (\d+)")


def _two_learner_config(workdir, exp: str, **main) -> str:
    main = dict(main)
    main.setdefault("policy", {}).setdefault("learn", {})["learner"] = {"learner_num": 2}
    return write_config(workdir, exp, main=main, system=FAST_FAULTS)


def _digests(workdir, exp: str) -> dict[str, tuple[str, int]]:
    out = {}
    for name in ("learner0", "learner1"):
        with open(os.path.join(str(workdir), exp, "log", name, f"{name}_logger.txt"), errors="replace") as f:
            found = _DIGEST.findall(f.read())
        assert found, f"{name} logged no final parameters"
        out[name] = (found[-1][0], int(found[-1][1]))
    return out


@pytest.mark.timeout(150)
def test_two_learners_train_to_the_limit_with_bit_identical_parameters(workdir):
    exp = "twolearners"
    cfg = _two_learner_config(workdir, exp)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "40"), workdir)
    assert proc.wait(timeout=120) == 0, read_log(workdir)
    digests = _digests(workdir, exp)
    assert digests["learner0"] == digests["learner1"], digests
    assert digests["learner0"][1] >= 40
    log0 = open(os.path.join(str(workdir), exp, "log", "learner0", "learner0_logger.txt")).read()
    assert "parameters identical on all 2 learners" in log0
    ckpts = os.listdir(os.path.join(str(workdir), exp, "ckpt"))
    assert f"iteration_{digests['learner0'][1]}.pth.tar" in ckpts  # rank 0's checkpoint of those parameters
    log1 = open(os.path.join(str(workdir), exp, "log", "learner1", "learner1_logger.txt")).read()
    assert "saved checkpoint" not in log1 and "rank 1 of 2 learners (gloo)" in log1  # only rank 0 writes
    assert result(workdir, exp)["train_iter"] >= 40
    assert not os.path.exists(os.path.join(str(workdir), exp, "learner_group.json"))
    assert not processes_mentioning(str(workdir))


@pytest.mark.timeout(150)
def test_two_learners_with_a_batchnorm_model_end_identical(workdir):
    """Only gradients were averaged: each learner's BatchNorm statistics followed its own share, and the end-of-run
    check failed the run after all the training."""
    exp = "twolearnersbn"
    cfg = _two_learner_config(workdir, exp, policy={"model": {"norm_type": "BN"}})
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "20"), workdir)
    assert proc.wait(timeout=120) == 0, read_log(workdir)
    digests = _digests(workdir, exp)
    assert digests["learner0"] == digests["learner1"] and digests["learner0"][1] >= 20, digests


@pytest.mark.timeout(150)
def test_a_learner_killed_mid_run_ends_the_run_with_one_clear_error(workdir):
    exp = "lostlearner"
    cfg = _two_learner_config(workdir, exp)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg), workdir)
    try:
        wait_for(lambda: eval_rows(workdir, exp) >= 1, 90, "the first evaluation", proc=proc)
        pid = wait_for(lambda: role_pid(workdir, "learner1"), 10, "learner1's process", proc=proc)
        t0 = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        code = proc.wait(timeout=60)  # bound: a run that hangs on the lost member would not end by itself
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    log = read_log(workdir)
    assert code != 0, log
    errors = [line for line in log.splitlines() if line.startswith("ding: ParallelRunError:")]
    assert len(errors) == 1, log
    # whichever notices first: the launcher (learner1's process ended) or learner0 (its group broke)
    assert ("learner 'learner1' (one of 2 learners sharing gradients) was killed by signal 9" in errors[0]
            or "learner0 (rank 0 of 2): the learner group broke" in errors[0]), errors[0]
    assert "not rebuilt" in errors[0] and "resume" in errors[0], errors[0]
    print(f"the run ended {took:.1f} s after learner1's kill -9")
    wait_for(lambda: not processes_mentioning(str(workdir)), 30, "every role process to exit")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_learners_reach_the_stop_value_and_resume_exactly(workdir):
    """The issue's run: two learners reach CartPole's stop value with bit-identical parameters; then the run is
    extended with --resume: both ranks start from the same checkpoint (weights, optimizer, train_iter) and end
    identical again."""
    exp = "twolearners_stop"
    cfg = _two_learner_config(workdir, exp)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg), workdir)
    assert proc.wait(timeout=400) == 0, read_log(workdir)
    assert result(workdir, exp)["eval_return"] >= 195
    first = _digests(workdir, exp)
    assert first["learner0"] == first["learner1"], first
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--resume", "--extend", "--train-iter",
                          str(first["learner0"][1] + 40)), workdir, log_name="resume.log")
    assert proc.wait(timeout=150) == 0, read_log(workdir, "resume.log")
    log1 = open(os.path.join(str(workdir), exp, "log", "learner1", "learner1_logger.txt")).read()
    assert f"rank 1 of 2 learners (gloo) starts at train_iter {first['learner0'][1]}" in log1
    second = _digests(workdir, exp)
    assert second["learner0"] == second["learner1"] and second["learner0"][1] > first["learner0"][1], second
