"""Exact resume: a stopped and resumed run ends with the same parameters and evaluations as one that never stopped."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from ding.engine.training_view import read_eval_csv
from ding.entry import serial_pipeline

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 400  # CartPole DQN seed 0 does not reach 195 before this, so both runs go the full distance


def _params(policy):
    return policy.learn_mode.state_dict()["model"]


def _same_params(a, b):
    return all(torch.equal(a[k], b[k]) for k in a) and a.keys() == b.keys()


def _evals(exp):
    return [(r["train_iter"], r["env_step"], r["eval_return_mean"], r["eval_return_std"])
            for r in read_eval_csv(os.path.join(exp, "log", "eval.csv"))]


def test_stop_and_resume_matches_an_unstopped_run(in_tmp_dir, cartpole_dqn):
    full = serial_pipeline(cartpole_dqn("full"), seed=0, max_train_iter=N)
    serial_pipeline(cartpole_dqn("part"), seed=0, max_train_iter=N // 2)
    assert read_result("part")["train_iter"] == N // 2
    resumed = serial_pipeline(cartpole_dqn("part"), seed=0, max_train_iter=N, resume=True)
    assert _same_params(_params(full), _params(resumed))
    assert _evals("full") == _evals("part")
    assert read_result("full")["env_step"] == read_result("part")["env_step"]
    # and the target network and optimizer too
    fs, rs = full.learn_mode.state_dict(), resumed.learn_mode.state_dict()
    assert _same_params(fs["target_model"], rs["target_model"])


def test_resume_from_a_checkpoint_written_inside_a_collect_cycle(in_tmp_dir, cartpole_dqn):
    """A hook checkpoint taken between two updates of one collect cycle (7 is not a multiple of
    update_per_collect=5), with prioritized replay: the owed priority update is applied on resume."""
    def cfg(name):
        main, create = cartpole_dqn(name, save_ckpt_after_iter=7, save_ckpt_after_run=False)
        main.policy.priority = True
        main.policy.priority_IS_weight = True
        main.policy.learn.learner.checkpoint = dict(keep_last=0)
        create.replay_buffer.type = "advanced"
        return main, create

    full = serial_pipeline(cfg("full"), seed=0, max_train_iter=120)
    serial_pipeline(cfg("part"), seed=0, max_train_iter=70)
    # keep only checkpoints up to iteration 63 (= 12 cycles + 3 updates into the 13th)
    for name in os.listdir("part/ckpt"):
        if name.startswith("iteration_") and int(name.split("_")[1].split(".")[0]) > 63:
            os.remove(os.path.join("part/ckpt", name))
    resumed = serial_pipeline(cfg("part"), seed=0, max_train_iter=120, resume=True)
    assert read_result("part")["train_iter"] == read_result("full")["train_iter"]
    assert _same_params(_params(full), _params(resumed))
    assert _evals("full") == _evals("part")


def test_truncated_newest_checkpoint_falls_back_to_last_good(in_tmp_dir, cartpole_dqn, caplog):
    full = serial_pipeline(cartpole_dqn("full"), seed=0, max_train_iter=N)
    serial_pipeline(cartpole_dqn("part"), seed=0, max_train_iter=N // 2)
    good = f"part/ckpt/iteration_{N // 2}.pth.tar"
    bad = f"part/ckpt/iteration_{N // 2 + 10}.pth.tar"
    with open(good, "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:  # a crash mid-write of a non-atomic writer would leave this
        f.write(data[: len(data) // 3])
    with caplog.at_level("WARNING"):
        resumed = serial_pipeline(cartpole_dqn("part"), seed=0, max_train_iter=N, resume=True)
    assert f"iteration_{N // 2}, the last good checkpoint" in caplog.text
    assert _same_params(_params(full), _params(resumed))


def test_atomic_save_never_replaces_good_checkpoint_on_crash(in_tmp_dir, cartpole_dqn, monkeypatch):
    serial_pipeline(cartpole_dqn("crash"), seed=0, max_train_iter=20)
    path = "crash/ckpt/iteration_20.pth.tar"
    before = open(path, "rb").read()

    def crash_midway(obj, f, *a, **k):
        f.write(b"partial bytes")
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(torch, "save", crash_midway)
    from ding.utils import torch_save_atomic

    with pytest.raises(OSError, match="simulated"):
        torch_save_atomic({"x": 1}, path)
    assert open(path, "rb").read() == before
    assert [n for n in os.listdir("crash/ckpt") if n.endswith(".tmp")] == []


_SUBPROCESS_CONFIG = """
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config, create_config
main_config.exp_name = {exp!r}
main_config.policy.learn.learner = dict(
    import_names=['tests.entry._plugins'],
    hook=dict(log_show_after_iter=100000,
              slow=dict(name='slow', type='test_slow_down', position='after_iter', priority=50,
                        ext_args=dict(seconds={seconds}))),
)
"""


def _ding(args, cwd, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "ding.entry.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


@pytest.mark.parametrize("sig,n,evals,seconds", [
    pytest.param(signal.SIGINT, 120, 2, 0.02, id="SIGINT-120-iterations"),
    pytest.param(signal.SIGINT, 300, 3, 0.01, id="SIGINT-300-iterations", marks=pytest.mark.slow),
    pytest.param(signal.SIGTERM, 300, 3, 0.01, id="SIGTERM-300-iterations", marks=pytest.mark.slow),
])
def test_signal_saves_a_checkpoint_and_resume_matches(in_tmp_dir, sig, n, evals, seconds):
    """Three real `ding` processes: an unstopped run, one stopped by a signal after ``evals`` evaluations, and its
    resume; the resumed run ends where the unstopped one did (the slow variants stop later in a longer run). The
    unstopped run and the one to stop run side by side (each sleeps in its slow-down hook most of the time)."""
    for exp in ("full", "part"):
        with open(f"{exp}.py", "w") as f:
            f.write(_SUBPROCESS_CONFIG.format(exp=exp, seconds=seconds))
    full = _ding(["-m", "serial", "-c", "full.py", "--train-iter", str(n)], ".")
    part = _ding(["-m", "serial", "-c", "part.py", "--train-iter", str(n)], ".")
    try:
        deadline = time.time() + 120
        while time.time() < deadline:  # interrupt once training is well under way
            if os.path.exists("part/log/eval.csv") and len(read_eval_csv("part/log/eval.csv")) >= evals:
                break
            time.sleep(0.02)
        part.send_signal(sig)
        out_part, _ = part.communicate(timeout=120)
        out_full, _ = full.communicate(timeout=300)
    finally:
        for proc in (full, part):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert full.returncode == 0, out_full
    assert part.returncode == 130, out_part
    assert "checkpoint" in out_part
    stopped_at = read_result("part")["train_iter"]
    assert read_result("part")["interrupted"] is True
    assert 0 < stopped_at < n
    assert os.path.exists(f"part/ckpt/iteration_{stopped_at}.pth.tar")

    resumed = _ding(["-m", "serial", "-c", "part.py", "--train-iter", str(n), "--resume"], ".")
    out_res, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out_res
    assert f"resumed from part/ckpt/iteration_{stopped_at}.pth.tar" in out_res
    assert _evals("full") == _evals("part")
    a = torch.load(f"full/ckpt/iteration_{n}.pth.tar", weights_only=False)["model"]
    b = torch.load(f"part/ckpt/iteration_{n}.pth.tar", weights_only=False)["model"]
    assert _same_params(a, b)
    shutil.rmtree("full")


def test_interrupt_says_so_once_and_prints_a_resume_command_that_works(in_tmp_dir):
    """Seed 1 of two, with --exp-name and a limit: the printed command resumes that very run when pasted."""
    import shlex

    with open("cfg.py", "w") as f:
        f.write(_SUBPROCESS_CONFIG.format(exp="ignored", seconds=0.01))
    part = _ding(["-m", "serial", "-c", "cfg.py", "-s", "1", "-s", "2", "--exp-name", "mine", "--train-iter", "300"],
                 ".")
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if os.path.exists("mine_seed1/log/eval.csv") and len(read_eval_csv("mine_seed1/log/eval.csv")) >= 2:
                break
            time.sleep(0.02)
        part.send_signal(signal.SIGINT)
        out, _ = part.communicate(timeout=120)
    finally:
        if part.poll() is None:
            part.kill()
    assert part.returncode == 130, out
    assert len([ln for ln in out.splitlines() if "interrupted" in ln]) == 1, out
    hint = [ln for ln in out.splitlines() if ln.startswith("ding: to resume: ")]
    assert hint == ["ding: to resume: ding -m serial -c cfg.py -s 1 --exp-name mine_seed1 --train-iter 300 --resume"]
    assert "ding: seed(s) 2 did not run: ding -m serial -c cfg.py -s 2 --exp-name mine --train-iter 300" in out
    assert not os.path.exists("mine_seed2")

    pasted = shlex.split(hint[0][len("ding: to resume: "):])
    assert pasted[0] == "ding"
    resumed = _ding(pasted[1:], ".")
    out_res, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out_res
    assert "resumed from mine_seed1/ckpt/iteration_" in out_res
    assert read_result("mine_seed1")["train_iter"] == 300 and read_result("mine_seed1")["seed"] == 1


def test_resume_from_the_config_key(in_tmp_dir, cartpole_dqn):
    full = serial_pipeline(cartpole_dqn("full"), seed=0, max_train_iter=60)
    serial_pipeline(cartpole_dqn("part"), seed=0, max_train_iter=30)
    main, create = cartpole_dqn("part")
    main.policy.learn.resume_training = True
    resumed = serial_pipeline((main, create), seed=0, max_train_iter=60)
    assert not [d for d in os.listdir(".") if d.startswith("part_")]  # continued in place, no renamed directory
    assert _same_params(_params(full), _params(resumed))


def test_resume_continues_the_newest_run_of_the_config(in_tmp_dir, cartpole_dqn):
    """A second run of the same config went to <exp>_<timestamp>/ (the directory existed); --resume continues
    that one, the run stopped last, not the older one."""
    serial_pipeline(cartpole_dqn("exp"), seed=0, max_train_iter=20)
    serial_pipeline(cartpole_dqn("exp"), seed=0, max_train_iter=40)
    renewed = [d for d in os.listdir(".") if d.startswith("exp_")]
    assert len(renewed) == 1
    serial_pipeline(cartpole_dqn("exp"), seed=0, max_train_iter=60, resume=True)
    assert read_result(renewed[0])["train_iter"] == 60
    assert read_result("exp")["train_iter"] == 20
