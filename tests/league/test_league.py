"""The league: jobs, results into payoff and ratings, exact save/load, and its config through compile_config."""
import importlib.util
import json

import numpy as np
import pytest

from ding.config import compile_config
from ding.envs import BaseEnvManager
from ding.league import LeagueJob, OneVsOneLeague, create_league
from ding.policy import PPOPolicy
from ding.utils import CheckpointError, ConfigError, LeagueError
from tests.di_engine_files import copy_di_engine_file

OUTCOMES = ("wins", "draws", "losses")


def _cfg(tmp_path, **overrides):
    cfg = dict(path_policy=str(tmp_path / "policy"), seed=11,
               active_players=dict(main_player=1, main_exploiter=1, league_exploiter=1),
               main_player=dict(one_phase_step=4, branch_probs=dict(pfsp=0.5, sp=0.3, verification=0.2)),
               main_exploiter=dict(one_phase_step=4), league_exploiter=dict(one_phase_step=4, mutate_prob=0.5))
    cfg.update(overrides)
    return cfg


def _league(cfg):
    league = create_league(cfg)
    with open(league.reset_checkpoint_path, "wb") as f:
        f.write(b"reset")
    for path in league.active_players_ckpts:
        with open(path, "wb") as f:
            f.write(b"weights")
    return league


def _step(league, rng, it):
    """One round of a training loop: each active player gets a job, plays, reports, may be snapshotted."""
    trace = []
    for pid in league.active_players_ids:
        job = league.get_job_info(pid)
        result = [OUTCOMES[i] for i in rng.integers(0, 3, size=4)]
        league.finish_job({"player_id": job["player_id"], "result": result})
        league.update_active_player({"player_id": pid, "train_iteration": it})
        trace.append((job.player_id, league.judge_snapshot(pid)))
    return trace


def test_job_info_names_players_and_checkpoints(tmp_path):
    league = _league(_cfg(tmp_path))
    job = league.get_job_info("main_exploiter_default_0")
    assert isinstance(job, LeagueJob) and job.agent_num == 2 and not job.eval_flag
    assert job.player_id == ("main_exploiter_default_0", "main_player_default_0")
    assert job["checkpoint_path"] == league.active_players_ckpts[1:2] + league.active_players_ckpts[:1]
    assert job["player_active_flag"] == [True, True]
    ev = league.get_job_info("main_player_default_0", eval_flag=True)
    assert ev.to_dict() == {"agent_num": 1, "launch_player": "main_player_default_0",
                            "player_id": ["main_player_default_0"], "checkpoint_path": [league.active_players_ckpts[0]],
                            "player_active_flag": [True], "eval_opponent": "RULE_BASED"}
    with pytest.raises(KeyError):
        job["eval_opponent"]
    with pytest.raises(LeagueError, match="'nobody' is not an active player"):
        league.get_job_info("nobody")


def test_finish_job_updates_payoff_and_elo(tmp_path):
    league = _league(_cfg(tmp_path, payoff=dict(decay=1.0, min_win_rate_games=1)))
    main, mex = league.active_players[:2]
    league.finish_job({"player_id": [main.player_id, mex.player_id], "result": [["wins"]], "eval_flag": True})
    assert league.payoff.win_rate(main, mex) == 1.0
    assert (main.rating.elo, mex.rating.elo) == (1216.0, 1184.0)
    assert league.player_rank() == {main.player_id: 1216.0, "league_exploiter_default_0": 1200.0,
                                    mex.player_id: 1184.0}
    # self-play is counted (as draws) but rates nobody
    league.finish_job({"player_id": [main.player_id, main.player_id], "result": ["wins"]})
    assert main.rating.elo == 1216.0
    with pytest.raises(LeagueError, match="no player 'ghost'"):
        league.finish_job({"player_id": [main.player_id, "ghost"], "result": ["wins"]})
    assert main.rating.elo == 1216.0 and league.payoff.record(main, mex).games == 1.0


def test_update_active_player_checks_its_input(tmp_path):
    league = _league(_cfg(tmp_path))
    league.update_active_player({"player_id": "main_player_default_0", "learner_step": 7})
    assert league.active_players[0].total_agent_step == 7
    assert league.update_active_player({"player_id": "main_player_default_0", "eval_win": True}) is False
    with pytest.raises(LeagueError, match="train_iteration must be an int >= 0"):
        league.update_active_player({"player_id": "main_player_default_0", "train_iteration": "7"})
    with pytest.raises(LeagueError, match="'x' is not an active player"):
        league.update_active_player({"player_id": "x", "train_iteration": 1})


def test_saved_state_resumes_exactly(tmp_path):
    """Save mid-run, load into a fresh league from the same config: the next opponent choices, snapshots, resets,
    payoffs and ratings are identical to those of the league that went on without stopping."""
    cfg = _cfg(tmp_path)
    league = _league(cfg)
    for pid in league.active_players_ids:
        league.judge_snapshot(pid, force=True)
    rng = np.random.default_rng(0)
    for it in range(1, 13):
        _step(league, rng, it)
    assert len(league.historical_players) > 3  # snapshots were taken during the run
    path = str(tmp_path / "league_state.json")
    league.save_state(path)
    rng_state = rng.bit_generator.state

    resumed = create_league(cfg)
    resumed.load_state(path)
    assert resumed.state_dict() == league.state_dict()
    rng2 = np.random.default_rng(0)
    rng2.bit_generator.state = rng_state
    for it in range(13, 40):
        assert _step(resumed, rng2, it) == _step(league, rng, it)
    assert resumed.state_dict() == league.state_dict()
    assert resumed.player_rank() == league.player_rank()
    # the file is plain JSON (no pickle) and the write left no temp file behind
    with open(path) as f:
        assert json.load(f)["version"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["league_state.json", "policy"]


def test_state_from_another_league_or_a_damaged_file_is_refused(tmp_path):
    league = _league(_cfg(tmp_path))
    path = str(tmp_path / "state.json")
    league.save_state(path)
    other = create_league(_cfg(tmp_path, active_players=dict(main_player=2)))
    with pytest.raises(LeagueError, match="differ from this league's"):
        other.load_state(path)
    with open(path, "w") as f:
        f.write("{trunc")
    with pytest.raises(CheckpointError, match="is not valid JSON"):
        league.load_state(path)
    with pytest.raises(CheckpointError, match="does not exist"):
        league.load_state(str(tmp_path / "missing.json"))


def _di_engine_league_demo_config(tmp_path):
    path = copy_di_engine_file("dizoo/league_demo/league_demo_ppo_config.py", str(tmp_path))
    spec = importlib.util.spec_from_file_location("league_demo_ppo_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.league_demo_ppo_config


def test_di_engine_league_keys_load_through_compile_config(tmp_path, monkeypatch):
    """DI-engine's league_demo_ppo_config league section is checked against the league's defaults: accepted as it
    is, a typo inside it fails naming the key, and the compiled section builds the league."""
    monkeypatch.chdir(tmp_path)
    league_cfg = _di_engine_league_demo_config(tmp_path).policy.other.league
    main = dict(exp_name="league_demo", env=dict(), policy=dict(other=dict(league=league_cfg)))
    compiled = compile_config(main, BaseEnvManager, PPOPolicy, save_cfg=False)
    section = compiled.policy.other.league
    assert section.league_type == "one_vs_one" and section.main_exploiter.min_valid_win_rate == 0.3
    league = create_league(section)
    assert isinstance(league, OneVsOneLeague)
    assert league.active_players_ids == ["main_player_default_0", "main_exploiter_default_0",
                                         "league_exploiter_default_0"]
    assert league.active_players[2].settings.mutate_prob == 0.5
    # auto mode (create_config) finds the league the same way
    auto = compile_config(main, save_cfg=False, auto=True, create_cfg=dict(policy=dict(type="ppo")))
    assert auto.policy.other.league.league_type == "one_vs_one"

    typo = dict(main, policy=dict(other=dict(league=dict(league_cfg, payoff=dict(type="battle", decya=0.9)))))
    with pytest.raises(ConfigError, match=r"policy.other.league.payoff.decya: unknown key.*did you mean 'decay'"):
        compile_config(typo, BaseEnvManager, PPOPolicy, save_cfg=False)
    wrong = dict(main, policy=dict(other=dict(league=dict(league_cfg, league_type="one_vs_on"))))
    with pytest.raises(Exception, match=r"policy.other.league.league_type.*unknown league type 'one_vs_on'"):
        compile_config(wrong, BaseEnvManager, PPOPolicy, save_cfg=False)
    with pytest.raises(ConfigError, match="create_config.league: not a create_config section"):
        compile_config(main, save_cfg=False, auto=True, create_cfg=dict(policy=dict(type="ppo"),
                                                                         league=dict(type="one_vs_one")))


def test_a_subclass_written_the_way_di_engine_demo_league_is_works(tmp_path):
    """DI-engine's dizoo DemoLeague subclasses BaseLeague and overrides _get_job_info (returning a dict),
    _mutate_player and _update_player ('learner_step'); those hooks are the ones the league calls."""
    from ding.league import ActivePlayer, BaseLeague

    class DemoStyleLeague(BaseLeague):
        def _get_job_info(self, player, eval_flag=False):
            opponent = player.get_job(eval_flag)["opponent"]
            return {"launch_player": player.player_id, "player_id": [player.player_id, opponent.player_id]}

        def _mutate_player(self, player):
            for p in self.active_players:
                if p.mutate({"reset_checkpoint_path": self.reset_checkpoint_path}) is not None:
                    p.rating = self.metric_env.create_rating()

        def _update_player(self, player, player_info):
            assert isinstance(player, ActivePlayer)
            if "learner_step" in player_info:
                player.total_agent_step = player_info["learner_step"] * 2

    league = DemoStyleLeague(_cfg(tmp_path))
    for path in league.active_players_ckpts:
        with open(path, "wb") as f:
            f.write(b"w")
    job = league.get_job_info("main_exploiter_default_0")
    assert job["player_id"] == ["main_exploiter_default_0", "main_player_default_0"]
    league.update_active_player({"player_id": "main_player_default_0", "learner_step": 3})
    assert league.active_players[0].total_agent_step == 6
    league.finish_job({"player_id": job["player_id"], "result": ["wins"]})
    assert league.active_players[1].rating.elo == 1216.0
    assert league.judge_snapshot("main_player_default_0", force=True)  # the demo-style mutate resets exploiter
    assert league.active_players[1].rating.elo == 1200.0
