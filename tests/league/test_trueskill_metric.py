"""TrueSkill ratings for the league (DI-engine's ``LeagueMetricEnv`` on the real ``trueskill`` package, the
``league`` extra), DI-engine's Elo helpers, and which rating system a league config gets."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from ding.league import BaseLeague, create_metric_env, get_elo, get_elo_array
from ding.league.metric import EloRating
from ding.league.shared_payoff import BattleRecordDict
from ding.utils import ConfigError

trueskill = pytest.importorskip("trueskill", reason="the league extra (pip install 'ding[league]') is not installed")

DI_METRIC = dict(mu=0, sigma=25 / 3, beta=25 / 3 / 2, tau=0.0, draw_probability=0.02)


def test_metric_env_creates_ratings_like_di_engine():
    from ding.league import LeagueMetricEnv

    env = LeagueMetricEnv(**DI_METRIC, elo_init=1000)
    r = env.create_rating()
    assert (r.mu, r.sigma, r.elo) == (0, 25 / 3, 1000)
    fixed = env.create_rating(mu=10, sigma=1e-8)
    assert fixed.exposure == pytest.approx(10.0) and isinstance(fixed, trueskill.Rating)
    assert r.exposure == pytest.approx(-25.0)  # mu - 3 sigma


def test_rate_1vs1_matches_the_trueskill_package_and_moves_elo():
    from ding.league import LeagueMetricEnv

    env = LeagueMetricEnv(**DI_METRIC)
    a, b = env.create_rating(), env.create_rating()
    a2, b2 = env.rate_1vs1(a, b, ["wins", "wins"])
    ref = trueskill.TrueSkill(**DI_METRIC)
    ra, rb = ref.create_rating(0, 25 / 3), ref.create_rating(0, 25 / 3)
    for _ in range(2):
        (ra,), (rb,) = ref.rate([(ra,), (rb,)], ranks=[0, 1])
    assert (a2.mu, a2.sigma, b2.mu, b2.sigma) == pytest.approx((ra.mu, ra.sigma, rb.mu, rb.sigma))
    assert a2.exposure > a.exposure and b2.mu < b.mu
    assert a2.elo > 1200 > b2.elo and (a2.games, b2.games) == (2, 2)
    lost_a, lost_b = env.rate_1vs1(a, b, ["losses"])
    assert lost_a.mu < 0 < lost_b.mu
    drawn_a, drawn_b = env.rate_1vs1(a, b, ["draws"])
    assert drawn_a.mu == pytest.approx(drawn_b.mu) and drawn_a.sigma < a.sigma
    with pytest.raises(ValueError, match="invalid result 'won'"):
        env.rate_1vs1(a, b, ["won"])


def test_rate_1vsC_keeps_the_constant_fixed_and_converges_to_it():  # noqa: N802 (DI-engine's name)
    from ding.league import LeagueMetricEnv

    env = LeagueMetricEnv(**DI_METRIC)
    player, bot = env.create_rating(), env.create_rating(mu=10, sigma=1e-8)
    for _ in range(20):
        player = env.rate_1vsC(player, bot, ["draws"] * 5)
    assert bot.mu == 10 and abs(player.mu - 10) < 1.0 and player.sigma < 2.0


def test_league_with_di_engine_metric_keys_rates_by_trueskill(tmp_path):
    cfg = dict(path_policy=str(tmp_path / "policy"), active_players=dict(main_player=1), metric=DI_METRIC)
    league = BaseLeagueForTest(cfg)
    main = league.active_players[0]
    assert type(league.metric_env).__name__ == "LeagueMetricEnv" and main.rating.mu == 0
    assert main._eval_opponent_difficulty == main.eval_opponent_difficulty  # DI-engine's attribute name
    open(main.checkpoint_path, "wb").close()
    assert league.judge_snapshot(main.player_id, force=True)
    hist = league.historical_players[0]
    league.finish_job({"launch_player": main.player_id, "player_id": [main.player_id, hist.player_id],
                       "result": [["wins"], ["wins"], ["draws"]]})
    assert main.rating.mu > 0 > hist.rating.mu
    state = league.state_dict()
    again = BaseLeagueForTest(cfg)
    again.load_state_dict(state)
    assert again.active_players[0].rating.mu == pytest.approx(main.rating.mu)
    assert again.historical_players[0].rating.sigma == pytest.approx(hist.rating.sigma)


def test_default_league_rates_by_elo_and_trueskill_keys_need_the_extra(tmp_path, monkeypatch):
    assert isinstance(create_metric_env({}), EloRating)
    assert isinstance(create_metric_env(dict(DI_METRIC, type="elo")), EloRating)
    with pytest.raises(ValueError, match="league.metric.type: 'glicko'"):
        create_metric_env({"type": "glicko"})
    monkeypatch.setitem(sys.modules, "trueskill", None)  # as if the extra were absent
    with pytest.raises(ConfigError, match=r"league.metric.mu: TrueSkill ratings .* pip install 'ding\[league\]'"):
        BaseLeagueForTest(dict(path_policy=str(tmp_path), active_players=dict(main_player=1), metric=DI_METRIC))
    league = BaseLeagueForTest(dict(path_policy=str(tmp_path), active_players=dict(main_player=1)))
    assert isinstance(league.metric_env, EloRating)


def test_get_elo_and_get_elo_array_follow_di_engine():
    assert get_elo(1200, 1200, 1) == (1216, 1184)
    assert get_elo(1200, 1200, 0) == (1200, 1200)
    assert get_elo(1000, 1400, -1) == (997, 1403)  # the favourite's expected win moves little
    with pytest.raises(ValueError, match="result must be 1"):
        get_elo(1200, 1200, 2)
    ratings = np.array([1200, 1200, 1000])
    result = np.array([[0, 1, 0], [-1, 0, 0], [0, 0, 0]])
    games = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    assert get_elo_array(ratings, result, games).tolist() == [1216, 1184, 1000]


def test_battle_record_dict_decays_a_copy():
    rec = BattleRecordDict()
    assert rec == {"wins": 0, "draws": 0, "losses": 0, "games": 0}
    rec["wins"], rec["games"] = 4, 8
    half = rec * 0.5
    assert half == {"wins": 2.0, "draws": 0.0, "losses": 0.0, "games": 4.0} and rec["wins"] == 4
    assert isinstance(half, BattleRecordDict)


class BaseLeagueForTest(BaseLeague):
    def _get_job_info(self, player, eval_flag=False):
        return {"opponent": player.get_job(eval_flag)}
