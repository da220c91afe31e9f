"""League self-play on a tiny zero-sum matrix game reaches its known mixed equilibrium.

The game is a biased matching pennies with roles. The matcher wins when both show heads, draws when both show
tails, and loses on a mismatch; the other player (the mismatcher) gets the opposite result. Matcher's score (win 1,
draw 0.5, loss 0), rows the matcher's action, columns the mismatcher's::

              H     T
        H     1     0
        T     0    0.5

The only equilibrium is mixed: both roles show heads with probability 1/3 (each makes the other indifferent:
1.5 q - 0.5 = 0 and 0.5 - 1.5 p = 0). Each game draws the roles at random, so one policy, P(heads) per role, plays
both sides, and the league's players all play the same game.

The learner moves its policy a step ``ALPHA`` towards the logit (softmax, temperature ``TAU``) best response to the
opponent's play it observed in the games of its last job; the league picks that opponent (PFSP over its snapshots or
self-play), snapshots it, counts the results in its payoff table and ratings. Smoothed best-response dynamics
converge in two-player zero-sum games to the logit equilibrium (QRE), which for ``TAU`` = 0.1 is P(heads) =
(0.389, 0.303), within 0.06 of the Nash equilibrium. Tolerance: the mean policy of the last 20 of 300 rounds lies
within 0.1 of 1/3 in each role (the QRE offset plus sampling noise of 256 games a round; seeds 0-2 land within
0.063, close to the QRE). A control shows the check can fail: the same learner against a fixed uniform opponent
ends far away.

The same check runs on DI-engine's league demo game itself, ``GameEnv('zero_sum')`` stepped game by game
(``ZeroSumDemo``): both seats reach its 3/8 equilibrium within the same tolerance.
"""
import json

import numpy as np
import pytest

from ding.league import create_league

MATCHER_SCORE = np.array([[1.0, 0.0], [0.0, 0.5]])
RESULT = {1.0: "wins", 0.5: "draws", 0.0: "losses"}
EQUILIBRIUM = 1.0 / 3.0
TAU, ALPHA, GAMES, ROUNDS, TOLERANCE = 0.1, 0.05, 256, 300, 0.1
ZERO_SUM_EQUILIBRIUM = 3.0 / 8.0  # DI-engine's league demo 'zero_sum' game (ZeroSumDemo below)


def play(rng, mine, theirs, games):
    """``games`` games of two policies (P(heads) as matcher, as mismatcher): my roles, the opponent's actions (0
    heads), my results."""
    roles = rng.integers(0, 2, games)  # 0: I am the matcher
    my_actions = (rng.random(games) >= mine[roles]).astype(int)
    their_actions = (rng.random(games) >= theirs[1 - roles]).astype(int)
    scores = np.where(roles == 0, MATCHER_SCORE[my_actions, their_actions],
                      1.0 - MATCHER_SCORE[their_actions, my_actions])
    return roles, their_actions, [RESULT[s] for s in scores]


def smoothed_best_response(policy, roles, their_actions):
    """A step towards the logit best response to the opponent's observed heads frequency in each role."""
    def heads(opponent_role):
        seen = their_actions[roles == 1 - opponent_role]
        return float((seen == 0).mean()) if seen.size else 0.5
    q, p = heads(1), heads(0)  # the opponent as mismatcher, as matcher
    advantage = np.array([1.5 * q - 0.5, 0.5 - 1.5 * p])  # heads minus tails, for my matcher and mismatcher roles
    return (1 - ALPHA) * policy + ALPHA / (1 + np.exp(-advantage / TAU))


def save(path, policy):
    with open(path, "w") as f:
        json.dump(policy.tolist(), f)


def load(path):
    with open(path) as f:
        return np.array(json.load(f))


def league_self_play(tmp_path, seed, fixed_opponent=None, play=play, respond=smoothed_best_response):
    league = create_league(dict(path_policy=str(tmp_path / f"policy{seed}"), seed=seed,
                                active_players=dict(main_player=1),
                                main_player=dict(one_phase_step=5, branch_probs=dict(pfsp=0.5, sp=0.5))))
    me = league.active_players[0]
    rng = np.random.default_rng(seed)
    policy = np.array([0.5, 0.5])
    save(me.checkpoint_path, policy)
    league.judge_snapshot(me.player_id, force=True)
    history = []
    for it in range(1, ROUNDS + 1):
        job = league.get_job_info(me.player_id)
        opponent = fixed_opponent if fixed_opponent is not None else load(job.checkpoint_path[1])
        roles, their_actions, results = play(rng, policy, opponent, GAMES)
        league.finish_job({"player_id": job["player_id"], "result": results})
        policy = respond(policy, roles, their_actions)
        save(me.checkpoint_path, policy)
        league.update_active_player({"player_id": me.player_id, "train_iteration": it})
        league.judge_snapshot(me.player_id)
        history.append(policy)
    return np.array(history), league


def test_league_self_play_reaches_the_mixed_equilibrium(tmp_path):
    history, league = league_self_play(tmp_path, seed=0)
    final = history[-20:].mean(axis=0)
    assert np.abs(final - EQUILIBRIUM).max() < TOLERANCE, final
    assert len(league.historical_players) >= 20  # the league snapshotted the learner as it went
    # the league chose past selves as opponents and counted those games
    past = [h for h in league.historical_players if league.payoff.record(league.active_players[0], h).games > 0]
    assert len(past) >= 10


def test_the_equilibrium_check_can_fail(tmp_path):
    """Control: against a fixed uniform opponent the same learner goes to its best response (about 0.92, 0.09),
    far from 1/3."""
    history, _ = league_self_play(tmp_path, seed=0, fixed_opponent=np.array([0.5, 0.5]))
    final = history[-20:].mean(axis=0)
    assert np.abs(final - EQUILIBRIUM).max() > 0.4, final


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_league_self_play_reaches_the_mixed_equilibrium_other_seeds(tmp_path, seed):
    history, _ = league_self_play(tmp_path, seed=seed)
    assert np.abs(history[-20:].mean(axis=0) - EQUILIBRIUM).max() < TOLERANCE


class ZeroSumDemo:
    """DI-engine's league demo game ``GameEnv('zero_sum')``, played through the env itself: seat 0 gets +3 for (0, 0),
    +1 for (1, 1), -2 for a mismatch, seat 1 the negative. Its only equilibrium is mixed: both seats play action 0
    with probability 3/8 (8 q - 3 = 0 makes seat 0 indifferent, 3 - 8 p = 0 seat 1; value -1/8), the env's
    ``OPTIMAL_POLICY``. A policy is P(action 0) per seat; each game draws my seat at random.

    The payoffs are 5-8 times those of the game above, so the logit temperature is ``TAU`` = 0.5 (at 0.1 the step
    towards a response this sharp overshoots and the policy circles the equilibrium). The logit equilibrium is then
    (0.413, 0.353), 0.038 from 3/8; seeds 0-2 ended within 0.067 of 3/8 and 0.035 of the logit equilibrium.
    """

    TAU = 0.5
    LOGIT_EQUILIBRIUM = np.array([0.4129, 0.3530])

    def __init__(self, seed: int) -> None:
        from dizoo.league_demo.game_env import PAYOFFS, GameEnv

        self.env = GameEnv("zero_sum")
        self.env.seed(seed)
        # seat 0's reward, rows its action, columns seat 1's: read from the env's table, checked against the game
        self.reward = np.array([[PAYOFFS["zero_sum"][(a, b)][0] for b in (0, 1)] for a in (0, 1)])

    def play(self, rng, mine, theirs, games):
        roles = rng.integers(0, 2, games)  # my seat
        my_actions = (rng.random(games) >= mine[roles]).astype(int)
        their_actions = (rng.random(games) >= theirs[1 - roles]).astype(int)
        results = []
        for seat, mine_a, theirs_a in zip(roles, my_actions, their_actions):
            self.env.reset()
            timestep = self.env.step([mine_a, theirs_a] if seat == 0 else [theirs_a, mine_a])
            assert timestep.done
            results.append(timestep.info[seat]["result"])
        return roles, their_actions, results

    def respond(self, policy, roles, their_actions):
        """A step towards the logit best response, per seat, to the opponent's observed play in the other seat."""
        def zeros(opponent_seat):
            seen = their_actions[roles == 1 - opponent_seat]
            return float((seen == 0).mean()) if seen.size else 0.5
        q, p = zeros(1), zeros(0)  # the opponent's P(action 0) in seat 1, in seat 0
        advantage = np.array([(self.reward[0] - self.reward[1]) @ [q, 1 - q],  # my action 0 minus 1, in seat 0
                              -(self.reward[:, 0] - self.reward[:, 1]) @ [p, 1 - p]])  # in seat 1 (reward negated)
        return (1 - ALPHA) * policy + ALPHA / (1 + np.exp(-advantage / self.TAU))


def test_zero_sum_demo_game_is_the_game_described():
    from dizoo.league_demo.game_env import OPTIMAL_POLICY

    game = ZeroSumDemo(0)
    assert game.reward.tolist() == [[3.0, -2.0], [-2.0, 1.0]]
    assert OPTIMAL_POLICY["zero_sum"][0] == ZERO_SUM_EQUILIBRIUM
    # at the equilibrium each seat is indifferent between its actions
    q = ZERO_SUM_EQUILIBRIUM
    assert (game.reward[0] - game.reward[1]) @ [q, 1 - q] == pytest.approx(0.0)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_league_self_play_reaches_the_zero_sum_demo_games_equilibrium(tmp_path, seed):
    game = ZeroSumDemo(seed)
    history, league = league_self_play(tmp_path, seed=seed, play=game.play, respond=game.respond)
    final = history[-20:].mean(axis=0)
    assert np.abs(final - ZERO_SUM_EQUILIBRIUM).max() < TOLERANCE, final
    assert np.abs(final - game.LOGIT_EQUILIBRIUM).max() < 0.05, final  # where these dynamics settle
    assert len(league.historical_players) >= 20


def test_the_zero_sum_equilibrium_check_can_fail(tmp_path):
    """Control: against a fixed uniform opponent the learner goes to its best response (about 0.88, 0.12)."""
    game = ZeroSumDemo(0)
    history, _ = league_self_play(tmp_path, seed=0, fixed_opponent=np.array([0.5, 0.5]), play=game.play,
                                  respond=game.respond)
    assert np.abs(history[-20:].mean(axis=0) - ZERO_SUM_EQUILIBRIUM).max() > 0.4
