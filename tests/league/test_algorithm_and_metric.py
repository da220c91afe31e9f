"""PFSP weightings and Elo ratings against hand-computed values."""
import numpy as np
import pytest

from ding.league import EloRating, Outcome, PlayerRating, expected_score, pfsp, uniform


def test_pfsp_weightings_match_hand_computed_values():
    rates = np.array([0.2, 0.5, 0.9])
    # squared: (0.8^2, 0.5^2, 0.1^2) = (0.64, 0.25, 0.01) / 0.90
    np.testing.assert_allclose(pfsp(rates, "squared"), [0.64 / 0.9, 0.25 / 0.9, 0.01 / 0.9])
    # variance: (0.16, 0.25, 0.09) / 0.50
    np.testing.assert_allclose(pfsp(rates, "variance"), [0.32, 0.5, 0.18])
    # linear: (0.8, 0.5, 0.1) / 1.4
    np.testing.assert_allclose(pfsp(rates, "linear"), [0.8 / 1.4, 0.5 / 1.4, 0.1 / 1.4])
    np.testing.assert_allclose(uniform(rates), [1 / 3] * 3)


def test_pfsp_without_any_preference_is_uniform():
    # every candidate always beaten: all 'squared' and 'variance' priorities are zero
    np.testing.assert_allclose(pfsp(np.array([1.0, 1.0]), "squared"), [0.5, 0.5])
    np.testing.assert_allclose(pfsp(np.array([0.0, 1.0, 1.0]), "variance"), [1 / 3] * 3)


def test_pfsp_refuses_bad_input():
    with pytest.raises(ValueError, match="unknown weighting 'cubic'"):
        pfsp(np.array([0.5]), "cubic")
    with pytest.raises(ValueError, match="non-empty 1-d array"):
        pfsp(np.array([]), "squared")
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        pfsp(np.array([0.5, 1.5]), "squared")


def test_elo_updates_match_hand_computed_values():
    elo = EloRating(elo_init=1200, k_factor=32)
    # equal ratings: expected 0.5, a win moves each by K * 0.5 = 16
    a, b = elo.rate_1vs1(elo.create_rating(), elo.create_rating(), [Outcome.WIN])
    assert (a.elo, b.elo, a.games, b.games) == (1216.0, 1184.0, 1, 1)
    # 1400 vs 1200: E_A = 1 / (1 + 10^(-200/400)) = 0.7597469; a draw moves A by 32 * (0.5 - 0.759747)
    e_a = 1 / (1 + 10 ** -0.5)
    assert expected_score(1400, 1200) == pytest.approx(e_a)
    a, b = elo.rate_1vs1(PlayerRating(1400.0), PlayerRating(1200.0), [Outcome.DRAW])
    assert a.elo == pytest.approx(1400 - 8.3119017, abs=1e-6)
    assert b.elo == pytest.approx(1200 + 8.3119017, abs=1e-6)
    # games apply in order: win then loss from 1200/1200 -> 1216/1184, then E_A = 1/(1+10^(-32/400)) = 0.5459221
    a, b = elo.rate_1vs1(elo.create_rating(), elo.create_rating(), [Outcome.WIN, Outcome.LOSS])
    assert a.elo == pytest.approx(1216 - 32 * 0.5459221, abs=1e-4)
    assert a.elo + b.elo == pytest.approx(2400)  # Elo is zero-sum between the two


def test_rating_against_a_fixed_opponent_moves_only_the_player():
    elo = EloRating(k_factor=10)
    fixed = PlayerRating(1200.0)
    r = elo.rate_1vsC(PlayerRating(1200.0), fixed, [Outcome.WIN, "wins"])  # DI-engine's strings work too
    # 1200 + 5 = 1205, then E = 1/(1+10^(-5/400)) = 0.507195 -> + 10 * 0.492805
    assert r.elo == pytest.approx(1205 + 4.92805, abs=1e-4)
    assert fixed.elo == 1200.0 and r.games == 2
