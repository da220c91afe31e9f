"""Two-player envs: the league demo's matrix games (exact payoffs, equilibria) and small Connect Four."""
from __future__ import annotations

import itertools
import os
import runpy

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding.envs import BaseEnvManager, InvalidActionError, get_env_cls
from ding.worker import BattleInteractionSerialEvaluator
from dizoo.board_games.connect_four.envs import ConnectFourEnv, RandomPlayer, ScriptedPlayer
from dizoo.board_games.connect_four.envs.connect_four_env import board_features
from dizoo.league_demo.game_env import GameEnv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# DI-engine's league demo payoffs: (action 0, action 1) -> (reward 0, reward 1), (result 0, result 1)
PRISONER = {(0, 0): ((-1, -1), ("draws", "draws")), (0, 1): ((-20, 0), ("losses", "wins")),
            (1, 0): ((0, -20), ("wins", "losses")), (1, 1): ((-10, -10), ("draws", "draws"))}
ZERO_SUM = {(0, 0): ((3, -3), ("wins", "losses")), (0, 1): ((-2, 2), ("losses", "wins")),
            (1, 0): ((-2, 2), ("losses", "wins")), (1, 1): ((1, -1), ("wins", "losses"))}


@pytest.mark.parametrize("env_type, table", [("prisoner_dilemma", PRISONER), ("zero_sum", ZERO_SUM)])
def test_game_env_payoffs_are_exact(env_type, table):
    env = GameEnv(env_type)
    env.seed(0)
    for joint, (rewards, results) in table.items():
        obs = env.reset()
        assert obs.shape == (2, 2) and obs.dtype == np.float32
        assert obs[0].tolist() == [0.0, 1.0] and obs[1].tolist() == [1.0, 0.0]  # each player knows its seat
        # actions as ints, arrays and tensors (what policies and DI-engine's demos send)
        for action in ([joint[0], joint[1]], [np.array([joint[0]]), np.array(joint[1])],
                       [torch.tensor([joint[0]]), torch.zeros(1) + joint[1]]):
            ts = env.step(action)
            assert ts.done is True
            assert ts.reward.shape == (2, 1) and ts.reward.dtype == np.float32
            assert ts.reward[:, 0].tolist() == list(rewards)
            assert [i["result"] for i in ts.info] == list(results)
            assert [float(i["eval_episode_return"][0]) for i in ts.info] == list(rewards)


def test_game_env_equilibria():
    pd = GameEnv("prisoner_dilemma")
    # defecting (1) is strictly better for either player whatever the other does: (1, 1) is the equilibrium
    for other in (0, 1):
        assert PRISONER[(1, other)][0][0] > PRISONER[(0, other)][0][0]
        assert PRISONER[(other, 1)][0][1] > PRISONER[(other, 0)][0][1]
    assert pd.optimal_policy == [0.0, 1.0]
    zs = GameEnv(EasyDict(env_type="zero_sum"))  # the cfg form the registry and managers use
    p = zs.optimal_policy[0]
    assert zs.optimal_policy == [0.375, 0.625]
    payoff = np.array([[ZERO_SUM[(a, b)][0][0] for b in (0, 1)] for a in (0, 1)], dtype=float)
    mix = np.array([p, 1 - p])
    # against the equilibrium mix each pure action earns the same: no player gains by deviating
    assert np.allclose(payoff @ mix, -1 / 8) and np.allclose(mix @ payoff, -1 / 8)


def test_game_env_registered_and_checks_input():
    assert get_env_cls(dict(type="league_demo_game", import_names=["dizoo.league_demo.game_env"])) is GameEnv
    with pytest.raises(ValueError, match=r"env_type 'chicken' is not one of .*env\.env_type"):
        GameEnv("chicken")
    env = GameEnv()
    env.reset()
    with pytest.raises(InvalidActionError, match="one action per player"):
        env.step([1])
    with pytest.raises(InvalidActionError, match="must be 0 or 1"):
        env.step([0, 2])
    env.seed(3)
    draws = [env.random_action() for _ in range(50)]
    assert all(len(a) == 2 and set(a) <= {0, 1} for a in draws) and len({tuple(a) for a in draws}) > 1


def test_game_env_in_a_manager():
    manager = BaseEnvManager([lambda: GameEnv("zero_sum") for _ in range(3)], EasyDict(shared_memory=False))
    with manager:
        manager.seed(0)
        manager.launch()
        out = manager.step({i: [np.array(0), np.array(i % 2)] for i in range(3)})
        assert [float(out[i].reward[0][0]) for i in range(3)] == [3.0, -2.0, 3.0]
        assert sorted(manager.ready_obs) == [0, 1, 2]  # one-step episodes reset at once


def _play(env, moves):
    """Play columns in turn (the player to move plays ``moves[k]``); return the last timestep."""
    ts = None
    for col in moves:
        ts = env.step([col, col])
    return ts


def test_connect_four_turns_wins_and_infos():
    env = ConnectFourEnv(dict(first_player=0))
    obs = env.reset()
    assert obs.shape == (2, 41) and obs[0, -1] == 1.0 and obs[1, -1] == 0.0  # 4x5 board x 2 planes + to-move flag
    ts = env.step([2, 4])  # only player 0 moves: column 2
    assert env.board[0].tolist() == [0, 0, 1, 0, 0]
    assert [i["acted"] for i in ts.info] == [True, False] and ts.info[0]["to_play"] == 1
    assert ts.obs[1][20 + 2] == 1.0 and ts.obs[0][2] == 1.0  # player 1 sees the piece as the opponent's
    assert not ts.done and ts.reward.tolist() == [[0.0], [0.0]]
    ts = _play(env, [0, 3, 0, 1])  # player 0 completes 1-2-3 along the bottom row
    assert ts.done and ts.reward[:, 0].tolist() == [1.0, -1.0]
    assert [i["result"] for i in ts.info] == ["wins", "losses"]
    assert [float(i["eval_episode_return"][0]) for i in ts.info] == [1.0, -1.0]


@pytest.mark.parametrize("moves, winner", [
    ([0, 1, 0, 1, 0], 0),  # vertical
    ([0, 1, 1, 2, 2, 4, 2], 0),  # diagonal up-right from (0, 0)
    ([4, 3, 3, 2, 2, 0, 2], 0),  # diagonal up-left from (0, 4)
    ([4, 0, 4, 1, 3, 2], 1),  # player 1 along the bottom
])
def test_connect_four_lines(moves, winner):
    env = ConnectFourEnv(dict(first_player=0))
    env.reset()
    ts = _play(env, moves)
    assert ts.done and ts.info[winner]["result"] == "wins" and ts.info[1 - winner]["result"] == "losses"


def test_connect_four_full_column_loses_and_bad_column_raises():
    env = ConnectFourEnv(dict(first_player=1))
    env.reset()
    ts = _play(env, [0, 0, 0, 0])
    assert not ts.done and ts.info[0]["action_mask"].tolist() == [0, 1, 1, 1, 1]
    ts = _play(env, [0])  # player 1 chooses the full column
    assert ts.done and [i["result"] for i in ts.info] == ["wins", "losses"]
    env.reset()
    with pytest.raises(InvalidActionError, match="is not a column 0..4"):
        env.step([5, 5])
    strict = ConnectFourEnv(dict(illegal_move="raise", first_player=0))
    strict.reset()
    _play(strict, [1, 1, 1, 1])
    with pytest.raises(InvalidActionError, match="column 1 is full"):
        strict.step([1, 1])
    with pytest.raises(ValueError, match="first_player 2"):
        ConnectFourEnv(dict(first_player=2))


def test_connect_four_draw_on_full_board():
    env = ConnectFourEnv(dict(board_rows=2, board_cols=2, win_length=2, first_player=0))
    env.reset()
    ts = _play(env, [0, 1, 1])  # player 0 fills (0,0) and (1,1): the diagonal wins
    assert ts.done and ts.info[0]["result"] == "wins"
    env = ConnectFourEnv(dict(board_rows=1, board_cols=4, win_length=3, first_player=0))
    env.reset()
    ts = _play(env, [0, 1, 3, 2])
    assert ts.done and [i["result"] for i in ts.info] == ["draws", "draws"] and ts.reward.sum() == 0


def test_connect_four_first_player_alternates_and_evaluator_envs_repeat():
    env = ConnectFourEnv()
    env.seed(0, dynamic_seed=True)
    assert [(env.reset(), env.to_play)[1] for _ in range(4)] == [0, 1, 0, 1]
    fixed = ConnectFourEnv()
    fixed.seed(1, dynamic_seed=False)  # evaluator env 1 of a manager seeded 0: always the same game
    assert [(fixed.reset(), fixed.to_play)[1] for _ in range(3)] == [1, 1, 1]


class _CountsOpenings(RandomPlayer):
    """A random player that counts the games it opens (an empty board with its to-move flag set)."""

    openings = 0

    def forward(self, data, **kwargs):
        self.openings += sum(1 for obs in data.values() if not np.any(obs[:-1]) and obs[-1] == 1.0)
        return super().forward(data, **kwargs)


def test_shipped_league_config_evaluates_half_the_games_moving_second(tmp_path, monkeypatch):
    """The league config's 100 evaluation games: 50 with the main player (seat 0) moving first, 50 moving second."""
    env_cfg = runpy.run_path(os.path.join(ROOT, "config", "serial", "connect_four_ppo_league.py"))["main_config"].env
    monkeypatch.chdir(tmp_path)
    cfgs = ConnectFourEnv.create_evaluator_env_cfg(env_cfg)
    envs = BaseEnvManager([lambda c=c: ConnectFourEnv(c) for c in cfgs], EasyDict())
    envs.seed(3, dynamic_seed=False)  # as serial_pipeline_battle seeds its evaluator envs
    counter = _CountsOpenings(seed=0)
    evaluator = BattleInteractionSerialEvaluator(EasyDict(n_episode=env_cfg.n_evaluator_episode, stop_value=2.0),
                                                 envs, [counter, ScriptedPlayer(seed=1)], exp_name="seat_count")
    try:
        _, info = evaluator.eval()
    finally:
        evaluator.close()
    assert env_cfg.n_evaluator_episode == 100 and len(info.players[0].returns) == 100
    assert counter.openings == 50


def test_scripted_player_wins_when_it_can_and_blocks_when_it_must():
    bot = ScriptedPlayer(seed=0)
    board = np.zeros((4, 5), dtype=np.int8)
    board[0, :2] = 2  # the opponent threatens column 2
    assert bot.choose(board) == 2
    board[0, 3] = board[1, 3] = 1  # an own vertical pair on column 3: playing there makes three
    assert bot.choose(board) == 3  # winning beats blocking
    env = ConnectFourEnv(dict(first_player=0))
    obs = env.reset()
    out = bot.forward({7: obs[1]})  # through the policy interface, from the player's own observation
    assert set(out) == {7} and 0 <= int(out[7]["action"]) < 5


def test_scripted_player_clearly_beats_random():
    env = ConnectFourEnv()  # alternating first player
    env.seed(0)
    players = [ScriptedPlayer(seed=1), RandomPlayer(seed=2)]
    results = {"wins": 0, "draws": 0, "losses": 0}
    for _ in range(100):
        obs, done = env.reset(), False
        while not done:
            ts = env.step([int(p.forward({0: obs[i]})[0]["action"]) for i, p in enumerate(players)])
            obs, done = ts.obs, ts.done
        results[ts.info[0]["result"]] += 1
    assert results["wins"] >= 80, results  # about 94% measured; random would win about half


def test_board_features_are_per_player():
    board = np.zeros((4, 5), dtype=np.int8)
    board[0, 0], board[0, 1] = 1, 2
    f0, f1 = board_features(board, 0, 0), board_features(board, 1, 0)
    assert f0[0] == 1 and f0[20 + 1] == 1 and f0[-1] == 1
    assert f1[1] == 1 and f1[20 + 0] == 1 and f1[-1] == 0
    assert list(itertools.chain(f0[:20], f0[20:40])) == list(itertools.chain(f1[20:40], f1[:20]))
