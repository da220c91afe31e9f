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
"""
import json

import numpy as np
import pytest

from ding.league import create_league

MATCHER_SCORE = np.array([[1.0, 0.0], [0.0, 0.5]])
RESULT = {1.0: "wins", 0.5: "draws", 0.0: "losses"}
EQUILIBRIUM = 1.0 / 3.0
TAU, ALPHA, GAMES, ROUNDS, TOLERANCE = 0.1, 0.05, 256, 300, 0.1


def play(rng, mine, theirs, games):
    """``games`` games of two policies (P(heads) as matcher, as mismatcher): my roles, both actions (0 heads), my
    scores."""
    roles = rng.integers(0, 2, games)  # 0: I am the matcher
    my_actions = (rng.random(games) >= mine[roles]).astype(int)
    their_actions = (rng.random(games) >= theirs[1 - roles]).astype(int)
    scores = np.where(roles == 0, MATCHER_SCORE[my_actions, their_actions],
                      1.0 - MATCHER_SCORE[their_actions, my_actions])
    return roles, their_actions, scores


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


def league_self_play(tmp_path, seed, fixed_opponent=None):
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
        roles, their_actions, scores = play(rng, policy, opponent, GAMES)
        league.finish_job({"player_id": job["player_id"], "result": [RESULT[s] for s in scores]})
        policy = smoothed_best_response(policy, roles, their_actions)
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
