"""The shared payoff table: decayed counts, win rates, unseen pairs, bad results."""
import numpy as np
import pytest
from easydict import EasyDict

from ding.league import BattleSharedPayoff, HistoricalPlayer, PlayerRating, create_payoff
from ding.utils import ConfigError, LeagueError


def _players(payoff, *ids):
    made = [HistoricalPlayer(EasyDict(), "default", payoff, f"{i}.pth", i, 0, PlayerRating(1200.0), parent_id="p")
            for i in ids]
    for p in made:
        payoff.add_player(p)
    return made


def test_counts_decay_before_each_game():
    payoff = BattleSharedPayoff(dict(decay=0.5, min_win_rate_games=0))
    a, b = _players(payoff, "a", "b")
    payoff.update({"player_id": ["a", "b"], "result": [["wins", "losses"], ["draws"]]})
    # win: w=1 g=1; loss: w=.5 l=1 g=1.5; draw: w=.25 l=.5 d=1 g=1.75
    r = payoff.record(a, b)
    assert (r.wins, r.losses, r.draws, r.games) == (0.25, 0.5, 1.0, 1.75)
    assert payoff.win_rate(a, b) == pytest.approx((0.25 + 0.5) / 1.75)
    # seen from b, wins and losses swap
    r = payoff.record("b", "a")
    assert (r.wins, r.losses) == (0.5, 0.25)
    assert payoff.win_rate(b, a) == pytest.approx(1 - (0.25 + 0.5) / 1.75)


def test_unseen_and_little_played_pairs_have_win_rate_one_half():
    payoff = BattleSharedPayoff(dict(decay=0.99, min_win_rate_games=3))
    a, b, c = _players(payoff, "a", "b", "c")
    assert payoff.win_rate(a, c) == 0.5
    payoff.update({"player_id": ["a", "b"], "result": ["wins", "wins"]})
    assert payoff.win_rate(a, b) == 0.5  # 1.99 decayed games < 3
    payoff.update({"player_id": ["a", "b"], "result": ["wins"]})
    assert payoff.win_rate(a, b) == 0.5  # 2.9701 games, still < 3
    payoff.update({"player_id": ["a", "b"], "result": ["losses"]})
    # 3.940399 games, of which 2.940399 (decayed) wins
    assert payoff.win_rate(a, b) == pytest.approx(2.940399 / 3.940399)


def test_getitem_shapes_follow_di_engine():
    payoff = BattleSharedPayoff(dict(decay=1.0, min_win_rate_games=1))
    a, b, c = _players(payoff, "a", "b", "c")
    payoff.update({"player_id": ["a", "b"], "result": ["wins"]})
    assert payoff[a, [b, c]].tolist() == [1.0, 0.5]
    assert payoff[[a, b], c].tolist() == [0.5, 0.5]
    assert payoff[[a, b], [b, c]].shape == (2, 2)
    assert np.ndim(payoff[a, b]) == 1


def test_self_play_counts_as_draws():
    payoff = BattleSharedPayoff(dict(decay=1.0, min_win_rate_games=1))
    (a,) = _players(payoff, "a")
    payoff.update({"player_id": ["a", "a"], "result": ["wins", "wins", "losses"]})
    r = payoff.record(a, a)
    assert (r.draws, r.wins, r.games) == (3.0, 0.0, 3.0) and payoff.win_rate(a, a) == 0.5


def test_a_bad_result_raises_and_leaves_the_table_unchanged():
    payoff = BattleSharedPayoff(dict(decay=1.0, min_win_rate_games=1))
    a, b = _players(payoff, "a", "b")
    payoff.update({"player_id": ["a", "b"], "result": ["wins"]})
    before = payoff.state_dict()
    with pytest.raises(LeagueError, match=r"job_info.result\[1\]: 'won' is not one of"):
        payoff.update({"player_id": ["a", "b"], "result": ["wins", "won"]})
    with pytest.raises(LeagueError, match="no player 'z' in the payoff table"):
        payoff.update({"player_id": ["a", "z"], "result": ["wins"]})
    with pytest.raises(LeagueError, match=r"job_info.player_id: expected \[home_id, away_id\]"):
        payoff.update({"player_id": "a", "result": ["wins"]})
    assert payoff.state_dict() == before


def test_payoff_config_is_checked():
    with pytest.raises(ConfigError, match=r"min_win_rate_games: 8 games can never be reached with decay=0.8"):
        BattleSharedPayoff(dict(decay=0.8, min_win_rate_games=8))
    with pytest.raises(ConfigError, match=r"league.payoff.decay: must be in \(0, 1\]"):
        BattleSharedPayoff(dict(decay=1.5))
    with pytest.raises(ConfigError, match="unknown payoff type 'solo'"):
        create_payoff(dict(type="solo"))
