"""Battle collectors and evaluator: one policy per player, per-player samples and results, turn-based games,
DI-engine's call shapes, logs and errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from easydict import EasyDict

from ding.envs import BaseEnvManager
from ding.model import VAC
from ding.policy import PPOPolicy
from ding.utils import ConfigError, EnvError
from ding.worker import (
    BattleEpisodeSerialCollector,
    BattleEvalInfo,
    BattleInteractionSerialEvaluator,
    BattleSampleSerialCollector,
    create_serial_collector,
    create_serial_evaluator,
)
from dizoo.board_games.connect_four.envs import ConnectFourEnv, ScriptedPlayer
from dizoo.league_demo.game_env import GameEnv


class Fixed:
    """A collect-mode-like policy that always plays ``action`` and records what it was given."""

    def __init__(self, action, n_sample=None, n_episode=None, collect_data=True):
        self.action = action
        self.cfg = EasyDict(collect=dict(n_sample=n_sample, n_episode=n_episode, unroll_len=1))
        self.collect_data = collect_data
        self.resets = []

    def forward(self, data, **kwargs):
        return {env_id: {"action": np.array(self.action), "obs_seen": np.array(obs)} for env_id, obs in data.items()}

    def reset(self, data_id=None):
        self.resets.append(data_id)

    def process_transition(self, obs, output, timestep):
        return {"obs": obs, "action": output["action"], "reward": timestep.reward, "next_obs": timestep.obs,
                "done": timestep.done}

    def get_train_sample(self, transitions):
        return list(transitions)

    def get_attribute(self, name):
        return getattr(self, name)


class ColumnPlayer(Fixed):
    """Connect Four: the first legal column from the left."""

    def forward(self, data, **kwargs):
        out = {}
        for env_id, obs in data.items():
            filled = obs[:20].reshape(4, 5)[-1] + obs[20:40].reshape(4, 5)[-1]
            out[env_id] = {"action": np.array(int(np.flatnonzero(filled == 0)[0]))}
        return out


def game_envs(n, env_type="prisoner_dilemma"):
    manager = BaseEnvManager([lambda: GameEnv(env_type) for _ in range(n)], EasyDict())
    manager.seed(0)
    return manager


def c4_envs(n, **cfg):
    manager = BaseEnvManager([lambda: ConnectFourEnv(cfg) for _ in range(n)], EasyDict())
    manager.seed(0)
    return manager


def test_episode_collector_returns_one_sample_list_per_policy(in_tmp_dir):
    p0, p1 = Fixed(1, n_episode=6), Fixed(0)
    cfg = EasyDict(get_train_sample=True, collect_print_freq=0)
    with BattleEpisodeSerialCollector(cfg, game_envs(3), [p0, p1], exp_name="battle") as collector:
        data, info = collector.collect(train_iter=7)
        assert len(data) == 2 and len(info) == 2
        assert len(data[0]) == len(data[1]) == 6 == collector.envstep  # one-step episodes, one sample each
        assert all(float(s["reward"][0]) == 0.0 and int(s["action"]) == 1 for s in data[0])  # defector vs cooperator
        assert all(float(s["reward"][0]) == -20.0 and int(s["action"]) == 0 for s in data[1])
        assert all(s["collect_iter"] == 7 and s["done"] for s in data[0] + data[1])
        assert all(s["obs"].tolist() == [0.0, 1.0] for s in data[0]) and data[1][0]["obs"].tolist() == [1.0, 0.0]
        assert [i["result"] for i in info[0]] == ["wins"] * 6 and [i["result"] for i in info[1]] == ["losses"] * 6
        data, _ = collector.collect(n_episode=3)
        assert len(data[0]) == 3 and collector.envstep == 9
    with open("battle/log/collector/collector_logger.txt") as f:
        log = f.read()
    assert "6 episodes, return 0 (min 0, max 0)" in log and "player returns 0 / -20" in log  # the shared log line
    # raw episodes without get_train_sample
    with BattleEpisodeSerialCollector(EasyDict(), game_envs(2), [Fixed(0), Fixed(0)], exp_name="battle") as c:
        data, _ = c.collect(n_episode=2)
        assert len(data[0]) == 2 and isinstance(data[0][0], list) and len(data[0][0]) == 1


def test_turn_based_transitions_hold_only_own_decisions(in_tmp_dir):
    """Connect Four, player 0 first, both play the leftmost legal column: 0 fills column 0 and 2 in turn with 1."""
    p0, p1 = ColumnPlayer(None), ColumnPlayer(None)
    collector = BattleEpisodeSerialCollector(EasyDict(get_train_sample=True), c4_envs(1, first_player=0), [p0, p1],
                                             exp_name="battle")
    with collector:
        data, info = collector.collect(n_episode=1)
    steps = collector.envstep
    # moves alternate 0,1,0,1,...: player 0 made ceil(steps / 2) decisions, player 1 the rest
    assert len(data[0]) == (steps + 1) // 2 and len(data[1]) == steps // 2
    winner = [i["result"] for i in info[0]][0]
    last0, last1 = data[0][-1], data[1][-1]
    assert last0["done"] and last1["done"]
    # both players' last decisions carry the final reward, even the one whose opponent ended the game
    assert {float(last0["reward"][0]), float(last1["reward"][0])} == {1.0, -1.0}
    assert float(last0["reward"][0]) == (1.0 if winner == "wins" else -1.0)
    for player, samples in enumerate(data):
        for s, nxt in zip(samples, samples[1:]):
            assert not s["done"] and float(s["reward"][0]) == 0.0
            assert np.array_equal(s["next_obs"], nxt["obs"])  # the next state is the player's next decision
            assert s["obs"][-1] == 1.0  # the player was to move at each of its decisions


def test_sample_collector_counts_per_policy_and_skips_non_collecting(in_tmp_dir):
    p0, p1 = Fixed(1, n_sample=8), Fixed(1, collect_data=False)
    with BattleSampleSerialCollector(EasyDict(), game_envs(4), [p0, p1], exp_name="battle") as collector:
        data, info = collector.collect(train_iter=2)
        assert len(data[0]) == 8 and data[1] == []
        assert all(float(s["reward"][0]) == -10.0 for s in data[0])  # mutual defection
        assert len(info[0]) == collector.envstep >= 8
        data, _ = collector.collect(n_sample=5, drop_extra=False)
        assert len(data[0]) >= 5
    with BattleSampleSerialCollector(EasyDict(), c4_envs(2), [ColumnPlayer(None, n_sample=6), ColumnPlayer(None)],
                                     exp_name="battle") as collector:
        data, _ = collector.collect(drop_extra=True)
        assert len(data[0]) == len(data[1]) == 6  # the n_sample of policy 0's config, for every collecting policy
        assert all(s["obs"][-1] == 1.0 for s in data[0] + data[1])


def test_collectors_with_ppo_policies(in_tmp_dir):
    cfg = EasyDict(PPOPolicy.default_config())
    cfg.model = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[8], actor_head_hidden_size=8,
                     critic_head_hidden_size=8)
    cfg.collect.n_episode, cfg.collect.discount_factor, cfg.collect.gae_lambda = 16, 1.0, 1.0
    policies = [PPOPolicy(cfg, model=VAC(**cfg.model)) for _ in range(2)]
    collector = create_serial_collector(EasyDict(type="episode_1v1", get_train_sample=True), env=game_envs(4),
                                        policy=[p.collect_mode for p in policies], exp_name="battle")
    assert isinstance(collector, BattleEpisodeSerialCollector)
    with collector:
        data, _ = collector.collect()
    assert len(data[0]) == len(data[1]) == 16
    assert {"obs", "action", "logit", "value", "reward", "done"} <= set(data[0][0])
    out = policies[0].learn_mode.forward(data[0])  # the samples train as they are
    assert out and np.isfinite(out[-1]["total_loss"])


class AlwaysAction:
    """DI-engine's demo opponent shape: forward(data) without kwargs, reset(data_id=[])."""

    def __init__(self, action):
        self.action = action

    def forward(self, data):
        import torch

        return {env_id: {"action": torch.zeros(1) + self.action} for env_id in data}

    def reset(self, data_id=[]):  # noqa: B006 -- DI-engine's signature
        pass


def test_evaluator_results_stop_flag_and_best_checkpoint(in_tmp_dir, capsys):
    saved = []
    cfg = EasyDict(n_episode=10, stop_value=-0.5, eval_freq=5)
    evaluator = BattleInteractionSerialEvaluator(cfg, game_envs(3), [Fixed(1), AlwaysAction(0)], exp_name="battle",
                                                 instance_name="fixed_evaluator")
    with evaluator:
        assert evaluator.should_eval(0) and not evaluator.should_eval(3) and evaluator.should_eval(5)
        stop, info = evaluator.eval(saved.append, train_iter=5, envstep=100)
        assert stop is True and isinstance(info, BattleEvalInfo)
        assert len(info) == 2 and len(info[0]) == 10  # DI-engine's shape: per player, the episodes' infos
        assert [e["result"] for e in info[0]] == ["wins"] * 10
        main, opponent = info.players
        assert (main.wins, main.draws, main.losses, main.return_mean, main.win_rate) == (10, 0, 0, 0.0, 1.0)
        assert (opponent.losses, opponent.return_mean) == (10, -20.0)
        assert saved == ["ckpt_best.pth.tar"] and evaluator.best_return == 0.0
        stop, _ = evaluator.eval(saved.append, train_iter=10)
        assert saved == ["ckpt_best.pth.tar"]  # not better: no new checkpoint
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[fixed_evaluator]")][0]
    assert "iter 5" in line and "W/D/L 10/0/0" in line and "return 0 / -20" in line and "reached stop value" in line
    with open("battle/log/fixed_evaluator/fixed_evaluator_logger.txt") as f:
        assert "W/D/L 10/0/0" in f.read()


def test_evaluator_mixed_results_and_turn_based_game(in_tmp_dir):
    cfg = EasyDict(type="battle_interaction", n_episode=4, stop_value=1.0)
    evaluator = create_serial_evaluator(cfg, env=game_envs(2, "zero_sum"), policy=[Fixed(0), Fixed(1)],
                                        exp_name="battle")
    with evaluator:
        stop, info = evaluator.eval()
    assert not stop and info.players[0].return_mean == -2.0 and info.players[0].losses == 4
    envs = c4_envs(2)  # alternating first player: env 0 lets player 0 start, env 1 player 1
    with BattleInteractionSerialEvaluator(EasyDict(n_episode=20), envs, [ScriptedPlayer(seed=0), ColumnPlayer(None)],
                                          exp_name="battle") as evaluator:
        _, info = evaluator.eval()
    main = info.players[0]
    assert main.wins + main.draws + main.losses == 20 and main.wins >= 15  # the scripted player beats leftmost-column


def test_battle_worker_errors(in_tmp_dir):
    with pytest.raises(TypeError, match="at least 2 policies"):
        BattleEpisodeSerialCollector(EasyDict(), game_envs(1), [Fixed(0)], exp_name="battle")
    with pytest.raises(TypeError, match=r"policy\[1\] \(int\) has no forward/reset"):
        BattleSampleSerialCollector(EasyDict(), game_envs(1), [Fixed(0), 3], exp_name="battle")
    with BattleEpisodeSerialCollector(EasyDict(), game_envs(1), [Fixed(0), Fixed(0)], exp_name="battle") as c:
        with pytest.raises(ConfigError, match="n_episode is not set"):
            c.collect()
    three = [Fixed(0, n_episode=1), Fixed(0), Fixed(0)]
    with BattleEpisodeSerialCollector(EasyDict(), game_envs(1), three, exp_name="battle") as c:
        with pytest.raises(EnvError, match="observation for 2 players, but 3 policies play"):
            c.collect()
    cfg = EasyDict(stop_value=[-10.1, -5.05], n_episode=2)
    with BattleInteractionSerialEvaluator(cfg, game_envs(1), [Fixed(0), Fixed(1)], exp_name="battle") as ev:
        with pytest.raises(ConfigError, match="stop_value must be one number"):
            ev.eval()


def test_policy_swap_and_resume_state(in_tmp_dir):
    """reset_policy with new opponents (what a league does between collects); state_dict keeps the open decisions."""
    collector = BattleEpisodeSerialCollector(EasyDict(get_train_sample=True), c4_envs(2, first_player=0),
                                             [ColumnPlayer(None), ColumnPlayer(None)], exp_name="battle")
    with collector:
        collector._step_envs({}, 0, lambda env_id, ts: None)  # one move: player 0 has an open decision per env
        state = copy.deepcopy(collector.state_dict())
        assert state["caches"][0].pending[0] is not None and state["caches"][0].pending[1] is None
        collector.load_state_dict(state)
        data, _ = collector.collect(n_episode=2)
        assert data[0][0]["obs"].sum() == 1.0  # the first decision (empty board + to-move flag) was kept
        collector.reset_policy([ScriptedPlayer(seed=0), ColumnPlayer(None)])
        assert collector.policy.policies[0].__class__ is ScriptedPlayer
        _, info = collector.collect(n_episode=2)
        assert len(info[0]) >= 2


class FlakyGame(GameEnv):
    """Fails its second step (the manager restarts it and reports an abnormal timestep)."""

    def __init__(self):
        super().__init__("prisoner_dilemma")
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps == 2:
            raise RuntimeError("boom")
        return super().step(action)


def test_abnormal_episode_is_dropped(in_tmp_dir):
    manager = BaseEnvManager([FlakyGame], EasyDict(max_retry=2, retry_waiting_time=0))
    with BattleEpisodeSerialCollector(EasyDict(get_train_sample=True), manager, [Fixed(1), Fixed(1)],
                                      exp_name="battle") as collector:
        data, info = collector.collect(n_episode=3)
    assert len(data[0]) == len(data[1]) == len(info[0]) == 3  # the failed step is neither a sample nor an episode
    assert collector.envstep == 3
    with open("battle/log/collector/collector_logger.txt") as f:
        assert "abnormal episode dropped" in f.read()
