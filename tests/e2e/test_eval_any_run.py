"""``ding -m eval`` and ``load_policy`` take a run of any mode: a parallel run's directory and checkpoints (with the
parallel config file, with the run's own total_config.py, or with no config), a league run's (serial or parallel,
evaluated against its fixed opponents); and
``ding -m eval`` uses ``policy.load_path`` when ``--load-path`` is missing."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ._parallel import CONNECT_FOUR_LEAGUE, ding_cmd, read_log, start, write_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.timeout(240)
_RETURN = re.compile(r"\[eval\] (\S+): return (-?[0-9.]+)")


def _eval(cwd, *args: str) -> tuple[str, float]:
    proc = subprocess.run(ding_cmd("-m", "eval", *args), cwd=str(cwd), capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    found = _RETURN.findall(out)
    assert found, out
    return found[-1][0], float(found[-1][1])


def test_a_parallel_run_is_evaluated_and_loaded_from_its_directory_or_checkpoints(workdir):
    exp = "evalpar"
    cfg = write_config(workdir, exp)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "30"), workdir)
    assert proc.wait(timeout=150) == 0, read_log(workdir)
    best = os.path.join(exp, "collector_ckpt", "ckpt_best.pth.tar")
    parallel_cfg = os.path.join(ROOT, "config", "parallel", "cartpole_dqn.py")
    assert os.path.isfile(os.path.join(workdir, best))
    # the documented command: the parallel config file and the collectors' best checkpoint
    assert _eval(workdir, "-c", parallel_cfg, "--load-path", best)[0] == best
    # the run's own total_config.py, and the learner's iteration checkpoint
    ckpts = sorted(os.listdir(os.path.join(workdir, exp, "ckpt")))
    learner_ckpt = os.path.join(exp, "ckpt", ckpts[-1])
    _eval(workdir, "-c", os.path.join(exp, "total_config.py"), "--load-path", learner_ckpt)
    # the run directory alone: its own config, its best checkpoint
    where, ret = _eval(workdir, "--load-path", exp)
    assert where == best and ret > 0
    code = (f"import ding, numpy as np; p = ding.load_policy({exp!r}); "
            "print(p.checkpoint, int(p.compute_single_action(np.zeros(4, np.float32))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(workdir), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split()[0] == best, out.stdout + out.stderr


def test_eval_uses_policy_load_path_when_load_path_is_missing(workdir):
    run = subprocess.run(ding_cmd("-m", "serial", "-c", os.path.join(ROOT, "config", "serial", "cartpole_dqn.py"),
                                  "--exp-name", "evalserial", "--train-iter", "10"),
                         cwd=str(workdir), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    ckpt = os.path.join("evalserial", "ckpt", "ckpt_best.pth.tar")
    cfg = workdir / "with_load_path.py"
    base = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")
    cfg.write_text(f"from ding.config import read_config\nmain_config, create_config = read_config({base!r})\n"
                   f"main_config.policy.load_path = {ckpt!r}\n")
    assert _eval(workdir, "-c", str(cfg))[0] == ckpt


_AGAINST = re.compile(r"\[eval\] (\S+) against (\S+): return (-?[0-9.]+) ± [0-9.]+ \| W/D/L (\d+)/(\d+)/(\d+)")


def _eval_league(cwd, *args: str) -> list[tuple[str, ...]]:
    proc = subprocess.run(ding_cmd("-m", "eval", *args), cwd=str(cwd), capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    found = _AGAINST.findall(out)
    assert found, out
    return found


def test_a_serial_league_run_loads_and_is_evaluated_against_the_envs_fixed_opponents(workdir):
    """ding -m eval refused a league run; it plays the main player against the env's fixed opponents as the run's
    evaluators do: with the run's seed, the first evaluation's games again (the scripted player starts from its
    seed, as in the run's first evaluation, which saved ckpt_best)."""
    from ding.engine.training_view import read_battle_eval_csv

    league_cfg = os.path.join(ROOT, "config", "serial", "connect_four_ppo_league.py")
    run = subprocess.run(ding_cmd("-m", "serial_battle", "-c", league_cfg, "--exp-name", "league", "--train-iter",
                                  "5"), cwd=str(workdir), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    code = ("import ding, numpy as np; p = ding.load_policy('league'); "
            "print(p.checkpoint, int(p.compute_single_action(np.zeros(41, np.float32))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(workdir), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split()[0].startswith("league"), out.stdout + out.stderr
    rows = read_battle_eval_csv(os.path.join(str(workdir), "league", "log", "battle_eval.csv"))
    assert len(rows) == 1 and rows[0]["train_iter"] == 0, rows  # one evaluation: the one ckpt_best holds
    logged = (rows[0]["evaluator"], rows[0]["return_mean"], rows[0]["wins"], rows[0]["draws"], rows[0]["losses"])
    best = os.path.join("league", "ckpt", "ckpt_best.pth.tar")
    for args in (("--load-path", "league"), ("-c", league_cfg, "--load-path", best)):
        [(where, name, ret, wins, draws, losses)] = _eval_league(workdir, *args)
        assert where == best
        assert (name, float(ret), float(wins), float(draws), float(losses)) == logged, args


def test_a_parallel_league_run_is_evaluated_against_its_eval_opponent(workdir):
    """A parallel league run's checkpoint plays the marine collector's eval_opponent, its own evaluations' games."""
    exp = "evalleague"
    cfg = write_config(workdir, exp, base=CONNECT_FOUR_LEAGUE)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "-s", "0", "--env-step", "600"), workdir)
    assert proc.wait(timeout=150) == 0, read_log(workdir)
    best = os.path.join(exp, "collector_ckpt", "ckpt_best.pth.tar")
    games = 40  # the shipped config's n_evaluator_episode
    parallel_cfg = os.path.join(ROOT, "config", "parallel", "connect_four_dqn_league.py")
    for args in (("--load-path", exp), ("-c", parallel_cfg, "--load-path", best)):
        [(where, name, ret, wins, draws, losses)] = _eval_league(workdir, *args)
        assert (where, name) == (best, "ScriptedPlayer"), args
        assert int(wins) + int(draws) + int(losses) == games and -1 <= float(ret) <= 1
