"""DI-engine 0.5.3's own ``ptz_simple_spread_{mappo,qmix,vdn,masac}_config.py`` (read from its wheel): they run
unchanged through the ``ding`` command, train with small budget knobs in-process, resume exactly, and (slow) reach
a stated return."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

pytest.importorskip("pettingzoo", reason="the petting_zoo extra is not installed: pip install -e '.[petting_zoo]'")
pytest.importorskip("mpe2", reason="the petting_zoo extra is not installed: pip install -e '.[petting_zoo]'")

from ding.config import read_config  # noqa: E402
from ding.engine.training_view import read_eval_csv  # noqa: E402
from ding.entry import serial_pipeline, serial_pipeline_onpolicy  # noqa: E402
from ding.entry.cli import main  # noqa: E402
from tests.di_engine_files import copy_di_engine_file  # noqa: E402

from .conftest import read_result  # noqa: E402

ALGOS = ("mappo", "qmix", "vdn", "masac")


def _copy(algo: str, tmp: str) -> str:
    return copy_di_engine_file(f"dizoo/petting_zoo/config/ptz_simple_spread_{algo}_config.py", tmp)


def _mode(algo: str) -> str:
    return "serial_onpolicy" if algo == "mappo" else "serial"


# Budget knobs appended to DI-engine's file (its own lines stay as they are): 2 collector envs and 1 evaluator env
# in the run's process, small collects, an evaluation every 4 iterations.
_KNOBS = """

# ---- budget knobs (appended by the test) ----
_env, _policy = main_config.env, main_config.policy
_env.collector_env_num, _env.evaluator_env_num, _env.n_evaluator_episode = 2, 1, 1
create_config.env_manager.type = "base"
_policy.collect.n_sample = {n_sample}
_policy.learn.batch_size = min(_policy.learn.batch_size, {n_sample})
if "update_per_collect" in _policy.learn:
    _policy.learn.update_per_collect = 2
if "epoch_per_collect" in _policy.learn:
    _policy.learn.epoch_per_collect = 1
if "random_collect_size" in _policy:
    _policy.random_collect_size = 50
if _env.n_agent == 5:  # VDN's 5 agents x 100 cycles: the evaluation episode alone would be 100 steps
    _env.max_cycles = 25
_policy.eval.evaluator = dict(_policy.eval.get("evaluator", {{}}), eval_freq=4)
_policy.learn.learner = dict(hook=dict(log_show_after_iter=100000))
main_config.exp_name = {exp_name!r}
"""


def _small_file(algo: str, tmp: str, exp_name: str) -> str:
    """DI-engine's file with :data:`_KNOBS` appended, as ``<tmp>/<exp_name>.py``."""
    with open(_copy(algo, tmp)) as f:
        text = f.read()
    path = os.path.join(tmp, f"{exp_name}.py")
    with open(path, "w") as f:
        f.write(text + _KNOBS.format(n_sample=64 if algo == "mappo" else 8, exp_name=exp_name))
    return path


def _small(algo: str, tmp: str, exp_name: str | None = None):
    """The file with budget knobs, read as the ``ding`` command reads it."""
    main_cfg, create_cfg = read_config(_small_file(algo, tmp, exp_name or f"ptz_{algo}_small"))
    assert main_cfg.policy.cuda is True and main_cfg.env.env_id == "simple_spread_v2"
    return main_cfg, create_cfg


def _pipeline(algo: str):
    return serial_pipeline_onpolicy if algo == "mappo" else serial_pipeline


@pytest.mark.parametrize("algo", ALGOS)
def test_di_engine_ptz_file_trains_with_budget_knobs_through_the_ding_command(in_tmp_dir, algo, caplog):
    """DI-engine's file with small budget knobs appended, through ``ding -m serial[_onpolicy]``: it trains, evaluates,
    exits 0 and warns at most once that ``cuda=True`` runs on the CPU (the full, unchanged runs: the slow test
    below)."""
    path = _small_file(algo, str(in_tmp_dir), f"ptz_{algo}_small")
    with caplog.at_level(logging.WARNING):
        assert main(["-m", _mode(algo), "-c", path, "-s", "0", "--train-iter", "6"]) == 0
    result = read_result(f"ptz_{algo}_small")
    assert result["train_iter"] >= 6 and result["env_step"] > 0
    evals = read_eval_csv(os.path.join(f"ptz_{algo}_small", "log", "eval.csv"))
    assert len(evals) >= 2 and all(r["eval_return_mean"] < 0 for r in evals)  # simple spread's returns are costs
    total = read_config(os.path.join(f"ptz_{algo}_small", "total_config.py"))[0]
    assert total.policy.cuda is True  # kept as written; the run went to the CPU
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("cuda" in w.lower() for w in warnings) <= 1, warnings  # once per process


def _continuous(tmp: str, exp_name: str, act_scale: bool):
    """DI-engine's MASAC file made continuous: ``sac`` (whose config has no ``env_num`` / ``eps`` keys)."""
    main_cfg, create_cfg = _small("masac", tmp, exp_name)
    main_cfg.env.update(continuous_actions=True, act_scale=act_scale)
    create_cfg.policy.type = "sac"
    for section, key in (("collect", "env_num"), ("eval", "env_num"), ("other", "eps")):
        main_cfg.policy[section].pop(key)
    return main_cfg, create_cfg


def test_sac_with_multi_agent_trains_on_continuous_simple_spread(in_tmp_dir):
    """DI-engine's MASAC file with Box actions: policy type ``sac`` + ``multi_agent=True`` (DI-engine's naming) is
    MASAC with a squashed-Gaussian actor (model ``continuous_maqac``); ``env.act_scale`` maps [-1, 1] onto mpe2's
    [0, 1]. Without act_scale the set-up check names it."""
    from ding.utils import ConfigError

    main_cfg, create_cfg = _continuous(str(in_tmp_dir), "cont", act_scale=True)
    policy = serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=6)
    assert type(policy).__name__ == "ContinuousMASACPolicy"
    assert type(policy._model).__name__ == "ContinuousMAQAC"
    assert read_result("cont")["train_iter"] >= 6
    assert all(r["eval_return_mean"] < 0 for r in read_eval_csv(os.path.join("cont", "log", "eval.csv")))
    main_cfg, create_cfg = _continuous(str(in_tmp_dir), "unscaled", act_scale=False)
    with pytest.raises(ConfigError, match=r"set env\.act_scale=True"):
        serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=1)


def test_di_engine_qmix_file_runs_unchanged_through_the_ding_command(in_tmp_dir, caplog):
    """The file as it is (16 subprocess envs, 600 sequences a collect): one collect and its 100 updates."""
    path = _copy("qmix", str(in_tmp_dir))
    with caplog.at_level(logging.WARNING):
        assert main(["-m", "serial", "-c", path, "-s", "0", "--train-iter", "1"]) == 0
    result = read_result(read_config(path)[0].exp_name)
    assert result["train_iter"] >= 100 and result["env_step"] >= 600
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("CUDA" in w or "cuda" in w for w in warnings) <= 1


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("algo", ALGOS)
def test_di_engine_ptz_file_runs_unchanged_through_the_ding_command(in_tmp_dir, algo):
    path = _copy(algo, str(in_tmp_dir))
    assert main(["-m", _mode(algo), "-c", path, "-s", "0", "--train-iter", "1"]) == 0
    assert read_result(read_config(path)[0].exp_name)["train_iter"] >= 1


def _evals(exp):
    return [(r["train_iter"], r["env_step"], r["eval_return_mean"])
            for r in read_eval_csv(os.path.join(exp, "log", "eval.csv"))]


@pytest.mark.parametrize("algo", ("mappo", "qmix", "masac"))
def test_stop_and_resume_matches_an_unstopped_run(in_tmp_dir, algo):
    """Stopped half-way (as Ctrl-C stops a run: at a train iteration, with a checkpoint) and resumed: the same
    parameters, evaluations and env steps as a run that never stopped (QMIX: the collectors' GRU states too)."""
    tmp = str(in_tmp_dir)
    n = 8
    full = _pipeline(algo)(_small(algo, tmp, "full"), seed=0, max_train_iter=n)
    _pipeline(algo)(_small(algo, tmp, "part"), seed=0, max_train_iter=n // 2)
    assert read_result("part")["train_iter"] < read_result("full")["train_iter"]
    resumed = _pipeline(algo)(_small(algo, tmp, "part"), seed=0, max_train_iter=n, resume=True)
    fs, rs = full.learn_mode.state_dict(), resumed.learn_mode.state_dict()
    for key in ("model", "target_model"):
        if key in fs:
            assert all(torch.equal(fs[key][k], rs[key][k]) for k in fs[key]), key
    assert _evals("full") == _evals("part") and len(_evals("full")) >= 2
    assert read_result("full")["env_step"] == read_result("part")["env_step"]
    if "collect_state" in fs:
        assert sorted(fs["collect_state"]) == sorted(rs["collect_state"])
        assert all(torch.equal(fs["collect_state"][k], rs["collect_state"][k]) for k in fs["collect_state"])


def _ding(args: list[str]):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "ding.entry.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("algo", [pytest.param("qmix"), pytest.param("mappo", marks=pytest.mark.slow),
                                  pytest.param("vdn", marks=pytest.mark.slow),
                                  pytest.param("masac", marks=pytest.mark.slow)])
def test_ctrl_c_and_resume_match_an_uninterrupted_run(in_tmp_dir, algo):
    """Real ``ding`` processes: one run to N iterations, one stopped by SIGINT after two evaluations, and that one
    resumed with ``--resume``: the same parameters, target network, evaluations and env steps (QMIX: the collectors'
    GRU states too). QMIX in the default suite (its recurrent state is the most to lose); the others slow."""
    n, mode = 16, _mode(algo)
    for exp in ("full", "part"):
        _small_file(algo, ".", exp)
    full = _ding(["-m", mode, "-c", "full.py", "-s", "0", "--train-iter", str(n)])
    part = _ding(["-m", mode, "-c", "part.py", "-s", "0", "--train-iter", str(n)])
    try:
        deadline = time.time() + 300
        while time.time() < deadline and part.poll() is None:  # interrupt once training is under way
            if os.path.exists("part/log/eval.csv") and len(read_eval_csv("part/log/eval.csv")) >= 2:
                break
            time.sleep(0.02)
        part.send_signal(signal.SIGINT)
        out_part, _ = part.communicate(timeout=120)
        out_full, _ = full.communicate(timeout=600)
    finally:
        for proc in (full, part):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert full.returncode == 0, out_full
    stopped_at = read_result("part")["train_iter"]
    assert part.returncode == 130, out_part  # 0 would mean it finished before the signal: raise n
    assert read_result("part")["interrupted"] is True and 0 < stopped_at < n
    resumed = _ding(["-m", mode, "-c", "part.py", "-s", "0", "--train-iter", str(n), "--resume"])
    out_res, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out_res
    assert f"resumed from part/ckpt/iteration_{stopped_at}.pth.tar" in out_res
    assert _evals("full") == _evals("part") and len(_evals("full")) > 2
    assert read_result("full")["env_step"] == read_result("part")["env_step"]
    a = torch.load(f"full/ckpt/iteration_{read_result('full')['train_iter']}.pth.tar", weights_only=False)
    b = torch.load(f"part/ckpt/iteration_{read_result('part')['train_iter']}.pth.tar", weights_only=False)
    keys = [k for k in ("model", "target_model", "collect_state") if k in a]
    assert "model" in keys and ("collect_state" in keys) == (algo in ("qmix", "vdn"))
    for key in keys:
        assert a[key].keys() == b[key].keys() and all(torch.equal(a[key][k], b[key][k]) for k in a[key]), key


MAPPO_TARGET, MAPPO_BUDGET = -150.0, 96000  # the untrained policy: about -175 to -190 (8 episodes)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", (0, 1, 2))
def test_di_engine_mappo_file_reaches_its_stated_return(in_tmp_dir, seed):
    """The unchanged MAPPO file through ``ding -m serial_onpolicy``: an evaluation (8 episodes) at or above
    MAPPO_TARGET within MAPPO_BUDGET env steps (docs/multi_agent.md, config/README.md)."""
    path = _copy("mappo", str(in_tmp_dir))
    assert main(["-m", "serial_onpolicy", "-c", path, "-s", str(seed), "--env-step", str(MAPPO_BUDGET)]) == 0
    evals = read_eval_csv(os.path.join(read_config(path)[0].exp_name, "log", "eval.csv"))
    # after training started: seed 2's untrained policy already scores -139 on its (fixed) evaluation episodes
    reached = [r for r in evals if r["eval_return_mean"] >= MAPPO_TARGET and 0 < r["env_step"] <= MAPPO_BUDGET]
    assert reached, [(r["env_step"], r["eval_return_mean"]) for r in evals]


TICTACTOE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "dizoo",
                         "petting_zoo", "config", "ptz_tictactoe_ppo_league_config.py")


def test_tictactoe_league_self_play_trains_through_the_battle_pipeline(in_tmp_dir):
    """PettingZoo's tic-tac-toe (AEC) by league self-play, shrunk: a few rounds, evaluations against the random
    player, and a league with snapshots (docs/multi_agent.md has the full run)."""
    import copy

    from ding.entry.serial_entry_battle import serial_pipeline_battle

    main_cfg, create_cfg = (copy.deepcopy(c) for c in read_config(TICTACTOE))
    main_cfg.exp_name = "ttt"
    main_cfg.env.update(collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=4)
    main_cfg.policy.collect.n_episode = 4
    main_cfg.policy.eval.evaluator.eval_freq = 4
    main_cfg.policy.other.league.main_player.one_phase_step = 4
    serial_pipeline_battle((main_cfg, create_cfg), seed=0, max_train_iter=12)
    result = read_result("ttt")
    assert result["train_iter"] >= 12 and result["env_step"] > 0
    assert os.path.exists(os.path.join("ttt", "log", "battle_eval.csv"))
