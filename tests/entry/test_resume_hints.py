"""Issue #22 items 3-4: every "to resume" line is a command that works, and none is printed with nothing to resume."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from ding.entry.cli_modes import resume_hint
from ding.entry.parallel_entry import parallel_pipeline
from ding.parallel.launch.driver import check_resumable
from ding.utils import ResumeError


def _args(mode: str, **kw) -> argparse.Namespace:
    base = dict(mode=mode, config="my cfgs/par.py", exp_name=None, train_iter=int(1e10), env_step=int(1e10),
                extend=False)
    base.update(kw)
    return argparse.Namespace(**base)


def test_no_checkpoint_means_no_resume_command(in_tmp_dir):
    os.makedirs("run_a/ckpt")
    line = resume_hint(_args("parallel"), 0, "run_a", "run_a")
    assert line.startswith("ding: nothing to resume") and "--resume" in line and "ding -m" not in line


def test_resume_command_names_the_real_config_and_flags(in_tmp_dir):
    os.makedirs("run_a_261124_101010/ckpt")
    open("run_a_261124_101010/ckpt/iteration_40.pth.tar", "wb").close()
    line = resume_hint(_args("parallel", train_iter=500, extend=True), 1, "run_a_261124_101010", "run_a")
    assert line == ("ding: to resume: ding -m parallel -c 'my cfgs/par.py' -s 1 --exp-name run_a_261124_101010 "
                    "--train-iter 500 --resume --extend")


def test_parallel_refusal_of_a_finished_run_offers_extend():
    state = {"commander": {"reached_stop_value": True, "best_return": 200.0, "envstep": 900, "learner_step": 500}}
    with pytest.raises(ResumeError) as info:
        check_resumable("r", state, None, 2000)
    assert "--extend" in str(info.value) and "raise env.stop_value above 200.0" in str(info.value)
    check_resumable("r", state, None, 2000, extend=True)  # on purpose: allowed
    with pytest.raises(ResumeError, match="nothing is left to do under --train-iter 500"):
        check_resumable("r", state, None, 500, extend=True)


def test_parallel_extend_needs_resume_and_a_limit():
    with pytest.raises(ResumeError, match="use it with --resume"):
        parallel_pipeline("unused.py", extend=True, max_train_iter=10)
    with pytest.raises(ResumeError, match="give one of them"):
        parallel_pipeline("unused.py", resume=True, extend=True)


def test_parallel_help_lists_extend():
    out = subprocess.run([sys.executable, "-m", "ding", "-m", "parallel", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert "--extend" in out.stdout and "at least" in out.stdout
