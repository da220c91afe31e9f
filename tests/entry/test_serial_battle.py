"""serial_pipeline_battle / ding -m serial_battle: self-play over a league, its exact resume (league state included),
and DI-engine's league demo configs run through it unchanged."""
from __future__ import annotations

import copy
import json
import os
import runpy
import signal

import pytest
import torch

from ding.engine.battle_loop import BattleLoop
from ding.engine.training_view import TrainingInterrupted, read_battle_eval_csv, read_eval_csv
from ding.entry.cli import main
from ding.entry.serial_entry_battle import serial_pipeline_battle
from ding.worker.learner.checkpoint import load_checkpoint_file
from tests.di_engine_files import copy_di_engine_file

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C4_CONFIG = os.path.join(ROOT, "config", "serial", "connect_four_ppo_league.py")
LEAGUE_DEMO_CREATE = dict(env=dict(type="league_demo_game", import_names=["dizoo.league_demo.game_env"]),
                          env_manager=dict(type="base"), policy=dict(type="ppo"))


def small_c4(exp_name: str) -> tuple:
    """The shipped Connect Four league config, shrunk: a main player and a main exploiter, snapshots every 2-4
    iterations (so the league takes snapshots and resets the exploiter), a checkpoint every 4."""
    module = runpy.run_path(C4_CONFIG)
    main_cfg, create_cfg = copy.deepcopy(module["main_config"]), copy.deepcopy(module["create_config"])
    main_cfg.exp_name = exp_name
    main_cfg.env.update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episode=4)
    main_cfg.policy.model.update(encoder_hidden_size_list=[32, 32], actor_head_hidden_size=32,
                                 critic_head_hidden_size=32)
    main_cfg.policy.learn.update(epoch_per_collect=1, batch_size=256)
    main_cfg.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**6, save_ckpt_after_iter=4))
    main_cfg.policy.collect.n_episode = 4
    main_cfg.policy.eval.evaluator.eval_freq = 5
    league = main_cfg.policy.other.league
    league.active_players = dict(main_player=1, main_exploiter=1)
    league.main_player.one_phase_step = 2
    league.main_exploiter = dict(one_phase_step=2)
    league.fixed_opponent_prob = 0.3
    return main_cfg, create_cfg


def _models(policy):
    return policy.learn_mode.state_dict()


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return a == b


def _run_state(exp):
    """The league state and every player's policy in the run's last checkpoint, paths made relative to the run."""
    ckpts = sorted((f for f in os.listdir(os.path.join(exp, "ckpt")) if f.startswith("iteration_")),
                   key=lambda f: int(f.split("_")[1].split(".")[0]))
    ckpt = load_checkpoint_file(os.path.join(exp, "ckpt", ckpts[-1]), allow_pickle=True)
    league = json.loads(json.dumps(ckpt["extra"]["league"]).replace(f'"{exp}/', '"RUN/'))
    league.pop("league_uid")
    return ckpt["model"], ckpt["extra"]["players"], league, ckpt["extra"]["evaluators"]


def _evals(exp):
    rows = read_battle_eval_csv(os.path.join(exp, "log", "battle_eval.csv"))
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]


def _assert_same_run(full, part):
    f_model, f_players, f_league, f_evals = _run_state(full)
    p_model, p_players, p_league, p_evals = _run_state(part)
    assert _same(f_model, p_model)
    assert _same(f_players, p_players)
    assert f_league == p_league
    assert _same(f_evals, p_evals)
    assert _evals(full) == _evals(part)
    assert read_result(full)["env_step"] == read_result(part)["env_step"]
    assert read_result(full)["players"] == read_result(part)["players"]


@pytest.mark.slow
def test_battle_run_resumed_after_a_limit_equals_an_unstopped_one(in_tmp_dir):
    serial_pipeline_battle(small_c4("full"), seed=0, max_train_iter=16)
    serial_pipeline_battle(small_c4("part"), seed=0, max_train_iter=7)
    assert read_result("part")["train_iter"] < 16
    serial_pipeline_battle(small_c4("part"), seed=0, max_train_iter=16, resume=True)
    _assert_same_run("full", "part")
    league = _run_state("full")[2]
    assert len(league["historical"]) >= 4  # snapshots were taken and payoffs counted: the state was worth checking
    assert league["payoff"]


def test_battle_run_stopped_by_ctrl_c_resumes_exactly(in_tmp_dir, monkeypatch):
    serial_pipeline_battle(small_c4("full"), seed=0, max_train_iter=12)
    jobs = {"n": 0}
    real_job = BattleLoop._job

    def job_then_sigint(self, player):
        real_job(self, player)
        jobs["n"] += 1
        if jobs["n"] == 5:  # in the middle of a round (two players per round)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(BattleLoop, "_job", job_then_sigint)
    with pytest.raises(TrainingInterrupted):
        serial_pipeline_battle(small_c4("part"), seed=0, max_train_iter=12)
    monkeypatch.setattr(BattleLoop, "_job", real_job)
    assert read_result("part")["interrupted"] is True and read_result("part")["train_iter"] < 12
    serial_pipeline_battle(small_c4("part"), seed=0, max_train_iter=12, resume=True)
    _assert_same_run("full", "part")
    league = _run_state("full")[2]
    assert len(league["historical"]) >= 4 and league["payoff"]  # snapshots and payoffs: the state was worth checking


def test_serial_battle_cli_trains_logs_and_plots(in_tmp_dir, capsys):
    main_cfg, create_cfg = small_c4("cli_run")
    with open("cfg.py", "w") as f:
        f.write(f"main_config = {dict(main_cfg)!r}\ncreate_config = {dict(create_cfg)!r}\n")
    assert main(["-m", "serial_battle", "-c", "cfg.py", "--train-iter", "3"]) == 0
    rows = read_battle_eval_csv(os.path.join("cli_run", "log", "battle_eval.csv"))
    assert rows and {r["evaluator"] for r in rows} == {"scripted"}
    assert all(r["wins"] + r["draws"] + r["losses"] == 4 for r in rows)
    assert len(read_eval_csv(os.path.join("cli_run", "log", "eval.csv"))) == len(rows)
    result = read_result("cli_run")
    assert result["ended"] == "limit" and result["train_iter"] >= 3 and "main_player_default_0" in result["players"]
    # ding -m plot: win rate against the scripted player and the main player's rating over env steps
    assert main(["-m", "plot", "cli_run"]) == 0
    assert "league_cli_run.png" in capsys.readouterr().out
    from ding.entry.plot import _battle_runs, battle_figure

    runs = _battle_runs(["cli_run"])
    fig = battle_figure(runs)
    win_ax, elo_ax = fig.axes
    xs, ys = win_ax.lines[0].get_data()
    assert list(xs) == [r["env_step"] for r in rows] and list(ys) == [r["win_rate"] for r in rows]
    assert list(elo_ax.lines[0].get_ydata()) == [r["rating"] for r in rows]
    with open("league_cli_run.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["league_demo_ppo_config", "selfplay_demo_ppo_config"])
def test_di_engine_league_demo_configs_train_unchanged_through_the_cli(in_tmp_dir, capsys, name):
    """DI-engine 0.5.3's demo configs, read from its wheel and not changed (no create config, no env type: DI-engine's
    demo script builds GameEnv itself), train through ``ding -m serial_battle -c <file>``: the league demo's game
    and PPO are filled in with one notice line; three league players (main, main exploiter, league exploiter) /
    plain self-play, evaluated against the equilibrium and the uniform player (its two stop values)."""
    path = copy_di_engine_file(f"dizoo/league_demo/{name}.py", ".")
    cfg = runpy.run_path(path)[name]
    assert "type" not in cfg.env and "create_config" not in runpy.run_path(path)
    assert main(["-m", "serial_battle", "-c", path, "-s", "0", "--env-step", "1500"]) == 0
    out = capsys.readouterr().out
    notices = [line for line in out.splitlines() if "DI-engine's league demo" in line]
    assert len(notices) == 1 and "env 'league_demo_game'" in notices[0] and "policy 'ppo'" in notices[0], out
    result = read_result(cfg.exp_name)
    rows = read_battle_eval_csv(os.path.join(cfg.exp_name, "log", "battle_eval.csv"))
    assert [r["evaluator"] for r in rows[:2]] == ["fixed_evaluator", "uniform_evaluator"]
    untrained = rows[1]
    assert untrained["train_iter"] == 0 and untrained["return_mean"] < -5.05  # not there before training
    # the main player defects (argmax) after training: both of DI-engine's stop values, within the budget
    assert result["ended"] == "stop_value" and 0 < result["env_step"] <= 1500 and result["train_iter"] > 0, result
    assert rows[-2]["return_mean"] >= -10.1 and rows[-1]["return_mean"] >= -5.05
    active = [p for p in result["players"] if "historical" not in p]
    assert len(active) == (3 if name.startswith("league") else 1)
    compiled = runpy.run_path(os.path.join(cfg.exp_name, "formatted_total_config.py"))
    assert compiled["create_config"]["env"]["type"] == "league_demo_game"


def test_di_engine_league_demo_configs_train_unchanged_from_python(in_tmp_dir, capsys):
    """The same two files through ``serial_pipeline_battle`` in Python, in the two forms a DI-engine user holds them:
    the file's path (its dict named after the file), and the imported dict with no create config. Both train to
    both of their stop values (the main player defects) within the CLI test's budget."""
    league_path = copy_di_engine_file("dizoo/league_demo/league_demo_ppo_config.py", ".")
    selfplay_path = copy_di_engine_file("dizoo/league_demo/selfplay_demo_ppo_config.py", ".")
    league_cfg = runpy.run_path(league_path)["league_demo_ppo_config"]
    selfplay_cfg = runpy.run_path(selfplay_path)["selfplay_demo_ppo_config"]
    before = copy.deepcopy(selfplay_cfg)
    policies = [serial_pipeline_battle(league_path, seed=0, max_env_step=1500),
                serial_pipeline_battle((selfplay_cfg, {}), seed=0, max_env_step=1500)]
    assert selfplay_cfg == before  # the caller's dict is not changed
    assert all(hasattr(p, "eval_mode") for p in policies)  # the main player's policy comes back
    for cfg, players in ((league_cfg, ["league_exploiter", "main_exploiter", "main_player"]),
                         (selfplay_cfg, ["naive_sp_player"])):
        result = read_result(cfg.exp_name)
        assert result["ended"] == "stop_value" and 0 < result["env_step"] <= 1500 and result["train_iter"] > 0, result
        active = sorted(p for p in result["players"] if "historical" not in p)
        assert [p.rsplit("_default_", 1)[0] for p in active] == players, active
        rows = read_battle_eval_csv(os.path.join(cfg.exp_name, "log", "battle_eval.csv"))
        assert [r["evaluator"] for r in rows[:2]] == ["fixed_evaluator", "uniform_evaluator"]
        assert rows[1]["train_iter"] == 0 and rows[1]["return_mean"] < -5.05  # not there before training
        assert rows[-2]["return_mean"] >= -10.1 and rows[-1]["return_mean"] >= -5.05
    notices = [line for line in capsys.readouterr().out.splitlines() if "DI-engine's league demo" in line]
    assert len(notices) == 2, notices  # one per run


def test_a_league_demo_config_with_its_own_env_type_is_left_alone():
    """The league demo default fills only what is missing: a config naming its env, or a game that is not the
    demo's, gets nothing."""
    from ding.engine.battle_start import league_demo_defaults

    demo = {"env": {"env_type": "zero_sum"}}
    create: dict = {}
    assert league_demo_defaults(demo, create) == ["env 'league_demo_game'", "policy 'ppo'"]
    assert create["env"]["type"] == "league_demo_game" and create["policy"]["type"] == "ppo"
    create = {"policy": {"type": "dqn"}}
    assert league_demo_defaults(demo, create) == ["env 'league_demo_game'"] and create["policy"]["type"] == "dqn"
    create = {"env": {"type": "connect_four"}}
    assert league_demo_defaults(demo, create) == [] and "policy" not in create
    assert league_demo_defaults({"env": {"env_type": "chess"}}, {}) == []


def _c4(exp_name: str) -> tuple:
    module = runpy.run_path(C4_CONFIG)
    main_cfg, create_cfg = copy.deepcopy(module["main_config"]), copy.deepcopy(module["create_config"])
    main_cfg.exp_name = exp_name
    main_cfg.policy.learn.learner.hook.log_show_after_iter = 10**6
    return main_cfg, create_cfg


def test_connect_four_league_beats_the_scripted_player_well_above_random_ci(in_tmp_dir):
    """CI variant of the benchmark (tests/benchmark/bench_connect_four_league.py): the shipped config, whose 50
    evaluation games here alternate the first player (25 started by the main player, 25 by the scripted one), every
    job against the scripted player, 12,000 env steps. A uniformly random legal player wins 7.5% of such games in
    expectation (11.5% moving first, 3.5% moving second, computed exactly over the game tree), the untrained greedy
    player 1 of 50; the trained one must win at least 15 of 50 (seed 0: 23)."""
    main_cfg, create_cfg = _c4("c4_ci")
    assert main_cfg.env.eval_first_player == "alternate"
    main_cfg.policy.other.league.fixed_opponent_prob = 1.0
    main_cfg.env.n_evaluator_episode = 50
    serial_pipeline_battle((main_cfg, create_cfg), seed=0, max_env_step=12_000)
    rows = read_battle_eval_csv(os.path.join("c4_ci", "log", "battle_eval.csv"))
    assert rows[0]["train_iter"] == 0 and rows[0]["wins"] <= 5
    assert max(r["wins"] for r in rows) >= 15, rows  # of 50: four times what random play wins


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_connect_four_league_reaches_80_percent_within_the_budget(in_tmp_dir, seed):
    """The promise of config/README.md: >= 80 wins in 100 games against the scripted player, 50 moving first and 50
    moving second, within 300,000 env steps (the run stops at mean return 0.6: wins - losses >= 60)."""
    main_cfg, create_cfg = _c4(f"c4_seed{seed}")
    serial_pipeline_battle((main_cfg, create_cfg), seed=seed, max_env_step=300_000)
    rows = read_battle_eval_csv(os.path.join(f"c4_seed{seed}", "log", "battle_eval.csv"))
    assert max(r["wins"] for r in rows) >= 80, rows
