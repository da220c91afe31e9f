"""``ding.entry.tune`` / ``ding -m tune``: Optuna trials as Trainers whose evaluations feed the pruner, a SQLite study
shared by two processes and continued after Ctrl-C, a run directory per trial, the best config as a runnable file,
the results table and plots, and the search space checked against the config. The 16-trial acceptance run is
``test_sixteen_trials_of_cartpole_dqn`` (slow)."""
from __future__ import annotations

import copy
import csv
import os
import signal
import subprocess
import sys
import time

import pytest

from ding.config import compile_run_config, read_config
from ding.entry import tune
from ding.utils import ConfigError

optuna = pytest.importorskip("optuna", reason="tuning needs the tune extra: pip install -e '.[tune]'")
from optuna.distributions import CategoricalDistribution, FloatDistribution  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CARTPOLE = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")
SPACE = os.path.join(ROOT, "config", "tune", "cartpole_dqn_space.py")


def _cfg(exp_name="tiny"):
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = exp_name
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=100000))
    main.policy.eval.evaluator.eval_freq = 20
    return main, create


def test_each_trial_is_a_trainer_whose_evaluations_feed_the_pruner(in_tmp_dir):
    space = {"policy.learn.learning_rate": CategoricalDistribution([1e-3, 1e-9]),
             "policy.learn.batch_size": [32, 64]}
    storage = f"sqlite:///{in_tmp_dir}/s.db"
    study = optuna.create_study(study_name="tiny_tune", storage=storage, direction="maximize")
    for lr in (1e-3, 1e-3, 1e-9):  # a learning rate that learns nothing: the median pruner stops it
        study.enqueue_trial({"policy.learn.learning_rate": lr, "policy.learn.batch_size": 32})
    result = tune(_cfg(), space, 3, storage=storage, out_dir="tiny_tune", max_env_step=480, n_startup_trials=1,
                  n_warmup_steps=0, sampler="random", sampler_seed=0)
    trials = sorted(result.study.trials, key=lambda t: t.number)
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.PRUNED]
    assert result.pruned_fraction == pytest.approx(1 / 3)
    run_dirs = [t.user_attrs["run_dir"] for t in trials]
    assert len(set(run_dirs)) == 3 and all(os.path.isdir(d) for d in run_dirs)
    for t in trials:  # the k-th evaluation of the trial's own run is the k-th value Optuna got
        with open(os.path.join(t.user_attrs["run_dir"], "log", "eval.csv"), newline="") as f:
            returns = [float(r["eval_return_mean"]) for r in csv.DictReader(f)]
        assert [t.intermediate_values[k] for k in sorted(t.intermediate_values)] == pytest.approx(returns, rel=1e-5)
        if t.state == TrialState.COMPLETE:
            assert t.value == pytest.approx(max(returns), rel=1e-5)
    # the results: table, plots, and the best config as a file that compiles and carries the best parameters
    with open(os.path.join("tiny_tune", "trials.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["state"] for r in rows] == ["COMPLETE", "COMPLETE", "PRUNED"]
    for name in ("history.png", "importance.png"):
        with open(os.path.join("tiny_tune", name), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    main, create = read_config(os.path.join("tiny_tune", "best_config.py"))
    assert main.policy.learn.learning_rate == result.best_params["policy.learn.learning_rate"] == 1e-3
    assert main.exp_name == "tiny_best"
    compile_run_config(main, create)


def test_the_space_is_checked_against_the_config_before_any_trial(in_tmp_dir):
    main, create = _cfg()
    with pytest.raises(ConfigError, match=r"'policy\.learn\.learnig_rate' is not a key .*did you mean "
                                          r"'policy\.learn\.learning_rate'"):
        tune((main, create), {"policy.learn.learnig_rate": FloatDistribution(1e-4, 1e-2)}, 2)
    with pytest.raises(ConfigError, match=r"policy\.learn\.batch_size.*expected int"):
        tune((main, create), {"policy.learn.batch_size": ["32", "64"]}, 2)
    with pytest.raises(ConfigError, match=r"'policy\.learn' is a section"):
        tune((main, create), {"policy.learn": [1, 2]}, 2)
    with open("bad_space.py", "w") as f:
        f.write("spaces = {}\n")
    with pytest.raises(ConfigError, match=r"space file 'bad_space.py' defines no `space` dict"):
        tune((main, create), "bad_space.py", 2)
    assert not os.path.exists("tiny_tune")  # nothing was started


def _tune_cmd(out, trials, *extra, env_step=160):
    return [sys.executable, "-m", "ding", "-m", "tune", "-c", CARTPOLE, "--space", SPACE, "--trials", str(trials),
            "--out", out, "--env-step", str(env_step), *extra]


def _env():
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _study(out):
    return optuna.load_study(study_name=os.path.basename(out), storage=f"sqlite:///{os.path.abspath(out)}/study.db")


def test_two_processes_share_one_sqlite_study_and_ctrl_c_then_a_rerun_continue_it(in_tmp_dir):
    procs = [subprocess.Popen(_tune_cmd("shared", 3, "--sampler-seed", str(i)), env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in (1, 2)]
    outs = [p.communicate(timeout=400)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    trials = _study("shared").trials
    assert sorted(t.number for t in trials) == [0, 1, 2]  # no trial twice, none lost
    assert len({t.user_attrs["run_dir"] for t in trials}) == 3
    assert {t.user_attrs["pid"] for t in trials} == {p.pid for p in procs}  # both did a share

    # Ctrl-C during a trial: exit 130, that trial does not count; the same command continues the study. Trials of
    # 2,000 env steps, so the signal (sent once trial 1 wrote its first evaluation) lands inside it: a 160-step trial
    # can end before the signal arrives, and a Ctrl-C after the last trial has finished ends nothing
    p = subprocess.Popen(_tune_cmd("resumed", 2, env_step=2000), env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and not os.path.exists(os.path.join("resumed", "trial_0001", "log", "eval.csv")):
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    out = p.communicate(timeout=120)[0]
    assert p.returncode == 130, out
    assert "Run the same command again to continue the study" in out
    states = {t.number: t.state for t in _study("resumed").trials}
    assert states[0] != TrialState.FAIL and states[1] == TrialState.FAIL
    done = subprocess.run(_tune_cmd("resumed", 2, env_step=2000), env=_env(), capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = _study("resumed").trials
    counted = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(counted) == 2 and len(trials) == 3 and trials[1].user_attrs.get("interrupted")
    assert os.path.isfile(os.path.join("resumed", "best_config.py"))


@pytest.mark.slow
def test_sixteen_trials_of_cartpole_dqn(in_tmp_dir):
    """The acceptance run (docs/tuning.md): 16 trials, median pruner, at least 30 % pruned, and the best config
    reaches 195 with ``ding -m serial``."""
    cmd = _tune_cmd("acc", 16, "--sampler-seed", "1")
    cmd[cmd.index("--env-step") + 1] = "4000"
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trials = _study("acc").trials
    assert len(trials) == 16
    assert sum(t.state == TrialState.PRUNED for t in trials) >= 0.3 * 16
    serial = subprocess.run([sys.executable, "-m", "ding", "-m", "serial", "-c", "acc/best_config.py", "-s", "0"],
                            env=_env(), capture_output=True, text=True, timeout=1200)
    assert serial.returncode == 0, serial.stdout[-3000:] + serial.stderr[-3000:]
    main, _ = read_config("acc/best_config.py")
    import json

    with open(os.path.join(main.exp_name, "result")) as f:
        assert json.load(f)["eval_return"] >= 195


def test_hyperband_gets_the_same_reports(in_tmp_dir):
    result = tune(_cfg("hb"), {"policy.learn.batch_size": [32, 64]}, 2, pruner="hyperband", max_env_step=160,
                  sampler="random", sampler_seed=0)
    assert type(result.study.pruner).__name__ == "HyperbandPruner"
    for t in result.study.trials:
        assert t.state in (TrialState.COMPLETE, TrialState.PRUNED) and len(t.intermediate_values) >= 1


def test_ctrl_c_during_a_trials_database_write_lets_the_write_finish(in_tmp_dir, monkeypatch):
    """A SIGINT that lands while Optuna writes to the study (here: inside ``Trial.report``) is a stop request: the
    write completes (a KeyboardInterrupt raised inside SQLAlchemy could leave SQLite's lock held, and the next write
    of the interrupted run waited on it), the trial's run stops at its next round, and ``tune`` raises
    KeyboardInterrupt with the trial marked interrupted."""
    from optuna.trial import Trial

    original, finished = Trial.report, []

    def report_with_a_signal(self, value, step):
        if not finished:
            os.kill(os.getpid(), signal.SIGINT)
        original(self, value, step)
        finished.append(step)

    monkeypatch.setattr(Trial, "report", report_with_a_signal)
    with pytest.raises(KeyboardInterrupt):
        tune(_cfg("sig"), {"policy.learn.batch_size": [32, 64]}, 2, out_dir="sig_tune", max_env_step=2000,
             sampler="random", sampler_seed=0)
    assert finished == [0]  # the write the signal landed in finished, and no evaluation came after it
    (trial,) = _study("sig_tune").trials
    assert trial.intermediate_values == {0: pytest.approx(trial.intermediate_values[0])}
    assert trial.state == TrialState.FAIL and trial.user_attrs["interrupted"]
