"""The one_vs_one commander without processes: league jobs on collect tasks, results into the payoff table only from
finished tasks, snapshots published beside the policy file, the league in the saved state; and the battle records
of the protocol."""
from __future__ import annotations

import copy
import os

import pytest

from ding.config import compile_config_parallel
from ding.parallel.commanders.one_vs_one import OneVsOneCommander
from ding.parallel.protocol import (
    FIXED_OPPONENT,
    BattleJob,
    BattleResult,
    CollectResult,
    CollectTask,
    CommanderState,
    EvalResult,
    EvalTask,
    LearnerStarted,
    LearnInfo,
    decode_result,
)
from ding.utils import ConfigError, ProtocolError

MAIN = "main_player_default_0"


def _cfg(**league):
    from dizoo.board_games.connect_four.config.parallel.connect_four_dqn_league_config import (
        create_config,
        main_config,
        system_config,
    )

    main, create, system = (copy.deepcopy(c) for c in (main_config, create_config, system_config))
    main.policy.collect.n_sample = 8
    main.policy.learn.batch_size = 4
    main.policy.other.commander.update(eval_interval=1e9, snapshot_check_iters=5)
    main.policy.other.league.main_player.one_phase_step = 10
    main.policy.other.league.fixed_opponent_prob = 0.0  # league jobs only, unless a test asks for fixed-opponent jobs
    main.policy.other.league.update(league)
    return compile_config_parallel(main, create, system, save_cfg=False).main


def _commander(path_policy, **league):
    c = OneVsOneCommander(_cfg(**league))
    c._pacing.ahead = 1000  # collection far ahead of the (absent) learner: the tests hand out jobs freely
    c.set_path_policy(str(path_policy))
    c.increase_collector_task_space()
    c.increase_collector_task_space()
    return c


def _publish(c, path_policy, step, content=b"weights"):
    with open(os.path.join(str(path_policy), c.get_policy_id()), "wb") as f:
        f.write(content + str(step).encode())
    c.update_learner_info("l", LearnInfo(learner_step=step, policy_iter=step))


def _start(c, path_policy):
    with open(os.path.join(str(path_policy), c.get_policy_id()), "wb") as f:
        f.write(b"weights0")
    c.learner_started("l", LearnerStarted(learner_step=0, policy_iter=0))


def _collect_task(c) -> CollectTask:
    while True:
        task = c.get_collector_task("collector0")
        assert task is not None
        if isinstance(task, EvalTask):
            c.finish_collector_task(task.task_id, EvalResult(policy_iter=0, eval_return_mean=-1.0))
            continue
        return task


def _answer(task: CollectTask, games: list[list[str]]) -> CollectResult:
    data = {"metadata": [], "envstep": 10, "battle": {"players": task.job.players, "games": games}}
    result = decode_result(task, data, "collector 'c0'")
    assert isinstance(result, CollectResult)
    return result


def _games(c) -> float:
    return sum(rec[5] for rec in c.league.state_dict()["payoff"]["records"])


def test_first_policy_is_snapshotted_beside_the_policy_file_and_jobs_name_files_there(in_tmp_dir, tmp_path):
    c = _commander(tmp_path)
    _start(c, tmp_path)
    (snap,) = c.league.historical_players
    assert os.path.dirname(snap.checkpoint_path) == str(tmp_path)
    with open(snap.checkpoint_path, "rb") as f:
        assert f.read() == b"weights0"  # the published policy, frozen
    seen = set()
    for _ in range(30):
        task = _collect_task(c)
        assert task.job is not None and task.job.players[0] == MAIN and task.job.policy_files[0] == "policy"
        seen.add(tuple(task.job.policy_files))
        c.notify_fail_collector_task(task)
    # self-play (the policy file in both seats) and the snapshot (its file, side by side with the policy)
    assert seen == {("policy", "policy"), ("policy", os.path.basename(snap.checkpoint_path))}


def test_finished_games_reach_the_payoff_table_failed_tasks_nothing(in_tmp_dir, tmp_path):
    c = _commander(tmp_path, payoff=dict(decay=1.0, min_win_rate_games=1))
    _start(c, tmp_path)
    task = _collect_task(c)
    c.finish_collector_task(task.task_id, _answer(task, [["wins", "losses"], ["draws", "draws"]]))
    assert _games(c) == 2
    failed = _collect_task(c)
    c.notify_fail_collector_task(failed)  # its collector died mid-battle: nothing of it is counted
    assert _games(c) == 2
    assert CommanderState.from_json(c.state_dict()).league_games == 2


def test_fixed_opponent_jobs_follow_the_league_probability_and_stay_out_of_the_payoff(in_tmp_dir, tmp_path):
    c = _commander(tmp_path, fixed_opponent_prob=0.5, payoff=dict(decay=1.0, min_win_rate_games=1))
    _start(c, tmp_path)
    draws = []
    for _ in range(200):
        task = _collect_task(c)
        draws.append(task.job.fixed_opponent)
        c.notify_fail_collector_task(task)
    assert 60 <= sum(draws) <= 140, sum(draws)  # about half of 200 draws
    fixed: list[CollectTask] = []
    league: list[CollectTask] = []
    while not (fixed and league):  # one task of each kind kept open
        task = _collect_task(c)
        kept = fixed if task.job.fixed_opponent else league
        if kept:
            c.notify_fail_collector_task(task)
        else:
            kept.append(task)
    job = fixed[0].job
    assert job.players == [MAIN, FIXED_OPPONENT] and job.policy_files == ["policy"] and not job.self_play
    assert BattleJob.from_json(job.to_json()) == job
    # a fixed-opponent task's games are counted apart: not in the payoff table, no rating moves
    rating = c.league.get_player_by_id(MAIN).rating
    c.finish_collector_task(fixed[0].task_id, _answer(fixed[0], [["wins", "losses"]] * 3))
    assert _games(c) == 0 and c.league.get_player_by_id(MAIN).rating == rating
    c.finish_collector_task(league[0].task_id, _answer(league[0], [["losses", "wins"]]))
    state = CommanderState.from_json(c.state_dict())
    assert _games(c) == 1 and state.league_games == 1 and state.fixed_opponent_games == 3
    with pytest.raises(ProtocolError, match=r"players\[1\]"):
        BattleJob.from_json({"players": [MAIN, "someone"], "policy_files": ["policy"], "fixed_opponent": True})
    with pytest.raises(ProtocolError, match="policy_files"):
        BattleJob.from_json({"players": [MAIN, FIXED_OPPONENT], "policy_files": ["policy", "policy"],
                             "fixed_opponent": True})
    with pytest.raises(ConfigError, match="fixed_opponent_prob"):
        _commander(tmp_path, fixed_opponent_prob=1.5)


def test_battle_answers_are_checked_against_their_task(in_tmp_dir, tmp_path):
    c = _commander(tmp_path)
    _start(c, tmp_path)
    task = _collect_task(c)
    with pytest.raises(ProtocolError, match="battle.players"):
        decode_result(task, {"metadata": [], "envstep": 1, "battle": {"players": ["x", "y"], "games": []}}, "c0")
    with pytest.raises(ProtocolError, match="battle.players"):  # a battle task's answer must report its games
        decode_result(task, {"metadata": [], "envstep": 1}, "c0")
    with pytest.raises(ProtocolError, match=r"games\[0\]\[1\]"):
        _answer(task, [["wins", "won"]])
    with pytest.raises(ProtocolError, match=r"games\[0\].*do not agree"):
        _answer(task, [["wins", "wins"]])
    with pytest.raises(ProtocolError, match=r"policy_files\[1\]"):
        BattleJob.from_json({"players": ["a", "b"], "policy_files": ["policy", "../etc/passwd"]})
    assert BattleResult(players=["a", "b"], games=[["wins", "losses"], ["draws", "draws"]]).rates() == (0.5, 0.5, 0.0)


def test_snapshots_follow_the_learner_and_the_league_resumes_exactly(in_tmp_dir, tmp_path):
    c = _commander(tmp_path, payoff=dict(decay=1.0, min_win_rate_games=1))
    _start(c, tmp_path)
    for step in range(5, 45, 5):
        _publish(c, tmp_path, step)
        task = _collect_task(c)
        c.finish_collector_task(task.task_id, _answer(task, [["wins", "losses"]] * 3))
    names = sorted(os.listdir(tmp_path))
    assert len(c.league.historical_players) >= 2, names  # every 2 * one_phase_step, or earlier when strong
    for hp in c.league.historical_players:
        assert os.path.exists(hp.checkpoint_path)
    state = c.state_dict()
    d = _commander(tmp_path, payoff=dict(decay=1.0, min_win_rate_games=1))
    d.load_state_dict(state)
    assert d.state_dict()["league"] == state["league"]
    for x in (c, d):  # the learner (re)starts from its checkpoint at step 40
        x.learner_started("l", LearnerStarted(learner_step=40, policy_iter=40))
    for _ in range(10):  # the same opponent choices from here on
        a, b = _collect_task(c), _collect_task(d)
        assert a.job == b.job
        c.notify_fail_collector_task(a)
        d.notify_fail_collector_task(b)


def test_eval_records_carry_the_win_rate(in_tmp_dir, tmp_path):
    c = _commander(tmp_path)
    _start(c, tmp_path)
    task = c.get_collector_task("collector0")
    assert isinstance(task, EvalTask)
    c.finish_collector_task(task.task_id, EvalResult(
        policy_iter=0, eval_return_mean=0.0,
        battle=BattleResult(players=["policy", "eval_opponent"], games=[["wins", "losses"], ["losses", "wins"],
                                                                        ["wins", "losses"], ["draws", "draws"]])))
    assert c.eval_history[-1].win_rate == 0.5


def test_a_league_with_two_active_players_is_refused(in_tmp_dir, tmp_path):
    with pytest.raises(ConfigError, match="exactly one active player"):
        _commander(tmp_path, active_players=dict(main_player=1, main_exploiter=1))


def test_the_first_snapshot_waits_for_the_policy_file(in_tmp_dir, tmp_path):
    c = _commander(tmp_path)
    c.learner_started("l", LearnerStarted(learner_step=0, policy_iter=0))  # reported before the file is there
    assert not c.league.historical_players
    _publish(c, tmp_path, 1)
    assert len(c.league.historical_players) == 1


@pytest.mark.timeout(30)
def test_a_fifo_or_a_link_for_the_policy_file_is_refused_without_blocking(in_tmp_dir, tmp_path):
    """Issue 36, item 12: the league's snapshot copy read the published policy with open(): a FIFO there blocked
    the coordinator for good, a link to /dev/zero read without limit."""
    c = _commander(tmp_path)
    path = os.path.join(str(tmp_path), c.get_policy_id())
    os.mkfifo(path)
    c.learner_started("l", LearnerStarted(learner_step=0, policy_iter=0))  # returns: the FIFO is refused unread
    assert not c.league.historical_players
    os.remove(path)
    os.symlink("/dev/zero", path)
    c.learner_started("l2", LearnerStarted(learner_step=0, policy_iter=0))
    assert not c.league.historical_players
    os.remove(path)
    _publish(c, tmp_path, 1)
    assert len(c.league.historical_players) == 1
