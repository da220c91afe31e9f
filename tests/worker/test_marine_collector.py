"""MarineParallelCollector in one process: self-play and snapshot tasks on Connect Four, whole games reported per
seat, evaluations against the scripted player with the win rate."""
from __future__ import annotations

import copy
import os

import pytest
import torch

from ding.config import compile_config_parallel
from ding.parallel.files import read_policy, write_policy
from ding.parallel.protocol import BattleJob, CollectTask, EvalTask, decode_result
from ding.parallel.roles.collector.marine import MarineParallelCollector
from ding.utils import ConfigError


def _cfg(**collector):
    from dizoo.board_games.connect_four.config.parallel.connect_four_dqn_league_config import (
        create_config,
        main_config,
        system_config,
    )

    main, create, system = (copy.deepcopy(c) for c in (main_config, create_config, system_config))
    main.exp_name = "marine"
    main.env.update(collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=6)
    main.policy.collect.collector.update(collector)
    return compile_config_parallel(main, create, system, save_cfg=False).main


@pytest.fixture
def marine(in_tmp_dir):
    cfg = _cfg()
    os.makedirs("policy")
    written: dict[str, object] = {}
    c = MarineParallelCollector(cfg, exp_name="marine", instance_name="collector0", seed=0,
                                policy_path=os.path.join("policy", "policy"),
                                send_stepdata=lambda data_id, sample, compress: written.__setitem__(data_id, sample),
                                get_policy_update_info=read_policy)
    c.start()
    model = c._policy.collect_mode.state_dict()["model"]
    write_policy(os.path.join("policy", "policy"), model, 3)
    snapshot = {k: torch.zeros_like(v) for k, v in model.items()}  # a different player: all-zero weights
    write_policy(os.path.join("policy", "main_ckpt_0.pth"), snapshot, 0)
    c.written = written
    yield c
    c.close()


def _task(job, n_sample=12):
    return CollectTask(task_id="collector_task_1", buffer_id="b", policy_id="policy", n_sample=n_sample,
                       collect_setting={"eps": 0.5}, job=job)


def test_self_play_keeps_both_seats_samples_and_reports_every_game(marine):
    job = BattleJob(players=["main", "main"], policy_files=["policy", "policy"])
    task = _task(job)
    result = decode_result(task, marine.run_task(task).to_json(), "collector0")  # checked as the coordinator does
    assert result.sample_count >= 12 and len(marine.written) == result.sample_count
    assert result.policy_iter == 3 and result.battle.players == ["main", "main"]
    games = result.battle.games
    assert games and all(g in (["wins", "losses"], ["losses", "wins"], ["draws", "draws"]) for g in games)
    # both seats' decisions are samples: each game gives at least one per seat
    assert result.sample_count >= 2 * len(games)


def test_a_snapshot_opponent_only_acts_and_its_file_is_loaded(marine):
    job = BattleJob(players=["main", "main_0_historical"], policy_files=["policy", "main_ckpt_0.pth"])
    task = _task(job)
    result = decode_result(task, marine.run_task(task).to_json(), "collector0")
    assert result.battle.players == job.players and result.battle.games
    opponent = marine._opponent.eval_mode.state_dict()["model"]
    assert all(float(v.abs().sum()) == 0 for v in opponent.values())  # the snapshot's weights play seat 1
    # only seat 0 collects: about one sample per two env steps (turns alternate)
    assert result.sample_count <= result.envstep // 2 + len(result.battle.games)


def test_a_fixed_opponent_job_plays_a_training_copy_of_the_scripted_player(marine):
    job = BattleJob(players=["main", "fixed_opponent"], policy_files=["policy"], fixed_opponent=True)
    task = _task(job)
    result = decode_result(task, marine.run_task(task).to_json(), "collector0")
    assert result.battle.players == job.players and result.battle.games
    assert marine._train_opponent.policy not in marine._evaluator._policy.policies  # its own copy, not the evaluator's
    assert type(marine._train_opponent.policy).__name__ == "ScriptedPlayer"
    # only seat 0 collects
    assert result.sample_count <= result.envstep // 2 + len(result.battle.games)


def test_a_missing_opponent_file_fails_the_task(marine):
    job = BattleJob(players=["main", "gone"], policy_files=["policy", "gone.pth"])
    with pytest.raises(FileNotFoundError, match="gone.pth"):
        marine.run_task(_task(job))


def test_evaluation_plays_the_scripted_player_and_reports_the_games(marine):
    task = EvalTask(task_id="collector_task_2", buffer_id="b", policy_id="policy")
    result = decode_result(task, marine.run_task(task).to_json(), "collector0")
    assert len(result.battle.games) == 6 and len(result.episode_returns) == 6
    wins, _, losses = result.battle.rates()
    assert result.eval_return_mean == pytest.approx(wins - losses)


def test_an_eval_opponent_is_required(in_tmp_dir):
    c = MarineParallelCollector(_cfg(eval_opponent=None), exp_name="marine", policy_path="p/policy",
                                send_stepdata=lambda *a: None, get_policy_update_info=read_policy)
    with pytest.raises(ConfigError, match="eval_opponent"):
        c.start()
    c.close()
