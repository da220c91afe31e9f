import math

import pytest

from ding.rl_utils import EpsilonSchedule, get_epsilon_greedy_fn


def test_exp_schedule_matches_formula():
    eps = get_epsilon_greedy_fn(0.95, 0.1, 10000, "exp")
    assert eps(0) == pytest.approx(0.95)
    assert eps(10000) == pytest.approx(0.1 + 0.85 / math.e)
    assert eps(5000) == pytest.approx(0.1 + 0.85 * math.exp(-0.5))
    assert eps(10**7) == pytest.approx(0.1)
    assert eps(100) > eps(200) > eps(300)


def test_linear_schedule_reaches_end_and_stays():
    eps = get_epsilon_greedy_fn(1.0, 0.05, 1000, type_="linear")
    assert eps(0) == pytest.approx(1.0)
    assert eps(500) == pytest.approx(0.525)
    assert eps(1000) == pytest.approx(0.05)
    assert eps(5000) == pytest.approx(0.05)
    # exactly end once decayed, as DI-engine's test compares it (1.0 + (0.1 - 1.0) * 1 rounds to 0.09999999999999998)
    assert get_epsilon_greedy_fn(1.0, 0.1, 90, type_="linear")(100) == 0.1
    assert get_epsilon_greedy_fn(1.0, 0.1, 90, type_="linear")(90) == 0.1


def test_positional_type_and_default_is_exp():
    assert get_epsilon_greedy_fn(0.5, 0.1, 10).type == "exp"
    assert isinstance(get_epsilon_greedy_fn(0.5, 0.1, 10, "linear"), EpsilonSchedule)


@pytest.mark.parametrize(
    "args, match",
    [
        ((0.9, 0.1, 100, "cosine"), "unknown type 'cosine'"),
        ((1.5, 0.1, 100, "exp"), r"start=1.5 is not a probability"),
        ((0.9, -0.1, 100, "exp"), r"end=-0.1 is not a probability"),
        ((0.9, 0.1, 0, "exp"), r"decay=0 must be > 0"),
    ],
)
def test_bad_schedule_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        get_epsilon_greedy_fn(*args)
