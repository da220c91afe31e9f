"""Players: snapshot and reset conditions, opponent branches, PFSP on a fixed payoff, config checks."""
import collections
import os

import numpy as np
import pytest

from ding.league import HistoricalPlayer, MainPlayer, create_league, pfsp
from ding.utils import CheckpointError, ConfigError, RegistryError


def _league(tmp_path, **overrides):
    cfg = dict(path_policy=str(tmp_path / "policy"), active_players=dict(main_player=1, main_exploiter=1,
                                                                         league_exploiter=1),
               payoff=dict(decay=1.0, min_win_rate_games=1))
    cfg.update(overrides)
    league = create_league(cfg)
    with open(league.reset_checkpoint_path, "wb") as f:
        f.write(b"reset")
    for pid, path in zip(league.active_players_ids, league.active_players_ckpts):
        with open(path, "wb") as f:
            f.write(pid.encode())
    return league


def _games(league, home, away, wins, losses=0):
    league.finish_job({"player_id": [home, away], "result": ["wins"] * wins + ["losses"] * losses})


def test_snapshot_after_one_phase_if_strong_else_after_two(tmp_path):
    league = _league(tmp_path, main_player=dict(one_phase_step=10, strong_win_rate=0.7))
    main = "main_player_default_0"
    assert league.judge_snapshot(main, force=True)  # step 0: the first historical player
    hist = league.historical_players[-1].player_id
    league.update_active_player({"player_id": main, "train_iteration": 5})
    assert not league.judge_snapshot(main)  # less than one phase
    league.update_active_player({"player_id": main, "train_iteration": 10})
    _games(league, main, hist, wins=7, losses=3)  # win rate 0.7: not above strong_win_rate
    assert not league.judge_snapshot(main)
    _games(league, main, hist, wins=1)  # 8/11 > 0.7
    assert league.judge_snapshot(main)
    assert league.historical_players[-1].player_id == f"{main}_10_historical"
    league.update_active_player({"player_id": main, "train_iteration": 29})
    assert not league.judge_snapshot(main)  # one phase since step 10, but no win against the step-10 snapshot yet
    league.update_active_player({"player_id": main, "train_iteration": 30})
    assert league.judge_snapshot(main)  # two phases since the last time: whatever the win rates
    # the snapshot's checkpoint is a copy of the player's
    with open(league.historical_players[-1].checkpoint_path, "rb") as f:
        assert f.read() == main.encode()


def test_a_second_snapshot_at_the_same_step_is_not_taken(tmp_path):
    league = _league(tmp_path)
    assert league.judge_snapshot("main_player_default_0", force=True)
    assert not league.judge_snapshot("main_player_default_0", force=True)
    assert len(league.historical_players) == 1


def test_reset_conditions_per_player_type(tmp_path):
    league = _league(tmp_path, league_exploiter=dict(mutate_prob=0.0))
    main, mex, lex = league.active_players
    _games(league, mex.player_id, main.player_id, wins=3)
    assert mex.rating.elo > 1200
    # the main exploiter is always reset: its checkpoint becomes the reset checkpoint, its rating a new one
    loaded = []
    league.load_checkpoint = lambda pid, path: loaded.append((pid, path))
    assert league.judge_snapshot(mex.player_id, force=True)
    with open(mex.checkpoint_path, "rb") as f:
        assert f.read() == b"reset"
    assert mex.rating.elo == 1200.0 and loaded == [(mex.player_id, league.reset_checkpoint_path)]
    # the snapshot kept the exploiter's weights from before the reset
    with open(league.historical_players[-1].checkpoint_path, "rb") as f:
        assert f.read() == mex.player_id.encode()
    # the main player never resets; a league exploiter with mutate_prob 0 neither
    for p in (main, lex):
        assert league.judge_snapshot(p.player_id, force=True)
        with open(p.checkpoint_path, "rb") as f:
            assert f.read() == p.player_id.encode()
    assert [pid for pid, _ in loaded] == [mex.player_id]


def test_league_exploiter_resets_with_mutate_prob(tmp_path):
    league = _league(tmp_path, league_exploiter=dict(mutate_prob=0.5), seed=3)
    resets = sum(league.mutate("league_exploiter_default_0") is not None for _ in range(400))
    assert 160 < resets < 240  # Binomial(400, 0.5): mean 200, sd 10
    assert league.mutate("main_player_default_0") is None


def test_branches_choose_the_documented_opponents(tmp_path):
    league = _league(tmp_path, main_player=dict(branch_probs=dict(sp=1.0)),
                     main_exploiter=dict(min_valid_win_rate=0.3))
    main, mex, lex = league.active_players
    assert {league.get_job_info(main.player_id).opponent_id for _ in range(20)} == {main.player_id}
    # no historical player yet: PFSP branches fall back to self-play
    assert league.get_job_info(lex.player_id).opponent_id == lex.player_id
    # the main exploiter plays the main player while it wins at least min_valid_win_rate against it ...
    for p in league.active_players:
        league.judge_snapshot(p.player_id, force=True)
    assert league.get_job_info(mex.player_id).opponent_id == main.player_id
    # ... and a snapshot of the main player once it loses too often
    _games(league, mex.player_id, main.player_id, wins=1, losses=9)
    assert league.get_job_info(mex.player_id).opponent_id == f"{main.player_id}_0_historical"
    # the league exploiter picks historical players only
    picks = {league.get_job_info(lex.player_id).opponent_id for _ in range(50)}
    assert picks and all(pid.endswith("_historical") for pid in picks)


def test_pfsp_picks_the_hardest_opponents_most(tmp_path):
    """With a fixed payoff (win rates 0.2, 0.5, 0.9 against three past players), the main player's 'pfsp' branch
    chooses them in proportion to the 'squared' weighting: the one it beats least, most."""
    league = _league(tmp_path, active_players=dict(main_player=1), main_player=dict(branch_probs=dict(pfsp=1.0)),
                     seed=7)
    main = league.active_players[0]
    for step in (1, 2, 3):
        league.update_active_player({"player_id": main.player_id, "train_iteration": step})
        assert league.judge_snapshot(main.player_id, force=True)
    hard, even, easy = (h.player_id for h in league.historical_players)
    _games(league, main.player_id, hard, wins=2, losses=8)
    _games(league, main.player_id, even, wins=5, losses=5)
    _games(league, main.player_id, easy, wins=9, losses=1)
    n = 4000
    counts = collections.Counter(league.get_job_info(main.player_id).opponent_id for _ in range(n))
    freq = np.array([counts[hard], counts[even], counts[easy]]) / n
    expected = pfsp(np.array([0.2, 0.5, 0.9]), "squared")  # 0.711, 0.278, 0.011
    np.testing.assert_allclose(freq, expected, atol=0.03)
    assert counts[hard] > counts[even] > counts[easy]


def test_player_config_errors_name_the_key(tmp_path):
    path = str(tmp_path / "p")
    with pytest.raises(ConfigError, match=r"league.main_player.branch_probs: probabilities must sum to 1, got 1.2"):
        create_league(dict(path_policy=path, active_players=dict(main_player=1),
                           main_player=dict(branch_probs=dict(pfsp=0.7, sp=0.5))))
    with pytest.raises(ConfigError, match="league.main_exploiter.branch_probs.pfsp: MainExploiter has no branch"):
        create_league(dict(path_policy=path, active_players=dict(main_exploiter=1),
                           main_exploiter=dict(branch_probs=dict(pfsp=1.0))))
    with pytest.raises(RegistryError, match="league.active_players.main_playr: unknown player type.*'main_player'"):
        create_league(dict(path_policy=path, active_players=dict(main_playr=1)))
    with pytest.raises(ConfigError, match="league.main_player.strong_winrate: unknown key.*did you mean "
                                          "'strong_win_rate'"):
        create_league(dict(path_policy=path, main_player=dict(strong_winrate=0.6)))
    with pytest.raises(ConfigError, match="league.path_policy: required"):
        create_league(dict(active_players=dict(main_player=1)))
    with pytest.raises(ConfigError, match="league.main_player.one_phase_step: expected a whole number >= 1"):
        create_league(dict(path_policy=path, active_players=dict(main_player=1), main_player=dict(one_phase_step=0)))
    assert not os.path.exists(os.path.join(path, "main_player_default_0_ckpt.pth"))


def test_default_league_is_one_naive_self_play_player(tmp_path):
    league = create_league(dict(path_policy=str(tmp_path)))
    assert league.active_players_ids == ["naive_sp_player_default_0"]
    assert league.get_job_info().opponent_id == "naive_sp_player_default_0"
    assert isinstance(league.active_players[0], MainPlayer) is False
    assert not any(isinstance(p, HistoricalPlayer) for p in league.payoff.players)


def test_a_snapshot_without_the_players_checkpoint_fails_and_changes_nothing(tmp_path):
    league = create_league(dict(path_policy=str(tmp_path), active_players=dict(main_player=1),
                                main_player=dict(one_phase_step=1)))
    league.update_active_player({"player_id": "main_player_default_0", "train_iteration": 2})
    before = league.state_dict()
    with pytest.raises(CheckpointError, match="main_player_default_0_ckpt.pth' does not exist; save the player"):
        league.judge_snapshot("main_player_default_0")
    assert league.state_dict() == before and league.historical_players == []
