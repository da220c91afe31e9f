"""The PettingZoo envs on the real library: DI-engine's simple-spread observation dict and rewards, the end at
max_cycles (terminal, or a truncation), seeding, the general parallel adapter (an AEC env through PettingZoo's
conversion too), and the set-up check of multi-agent configs against the env."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo", reason="the petting_zoo extra is not installed: pip install -e '.[petting_zoo]'")
pytest.importorskip("mpe2", reason="the petting_zoo extra is not installed: pip install -e '.[petting_zoo]'")

from ding.policy import check_policy_fits_env, create_policy  # noqa: E402
from ding.utils import ENV_REGISTRY, ConfigError  # noqa: E402
from dizoo.petting_zoo.envs import PettingZooEnv, PettingZooParallelEnv  # noqa: E402
from dizoo.petting_zoo.envs import petting_zoo_simple_spread_env as spread_module  # noqa: E402


def spread(**cfg):
    return PettingZooEnv(dict(dict(n_agent=3, n_landmark=3, max_cycles=5), **cfg))


def test_observation_dict_has_di_engines_keys_and_shapes():
    n, obs_dim = 3, 2 + 2 + 3 * 2 + 2 * 2 + 2 * 2  # DI-engine's formula: 18
    state_dim = n * 4 + 3 * 2 + n * (n - 1) * 2  # 30
    env = spread()
    env.seed(0)
    obs = env.reset()
    assert {k: v.shape for k, v in obs.items()} == {
        "agent_state": (n, obs_dim), "global_state": (state_dim,), "agent_alone_state": (n, 4 + 6 + 4),
        "agent_alone_padding_state": (n, obs_dim), "action_mask": (n, 5)}
    assert all(obs[k].shape == env.observation_space[k].shape for k in obs)
    # global state: positions of all agents and landmarks (agent 0's view), every velocity, every message
    assert np.allclose(obs["global_state"][:2], obs["agent_state"][0, 2:4])
    assert np.allclose(obs["global_state"][12:18], obs["agent_state"][:, :2].reshape(-1))
    specific = spread(agent_specific_global_state=True)
    specific.seed(0)
    o2 = specific.reset()
    assert o2["global_state"].shape == (n, obs_dim + state_dim) == specific.observation_space["global_state"].shape
    assert np.allclose(o2["global_state"][:, :obs_dim], o2["agent_state"])
    only = spread(agent_obs_only=True)
    only.seed(0)
    assert only.reset().shape == (n, obs_dim)
    for e in (env, specific, only):
        e.close()


def test_rewards_are_di_engines_global_plus_local_and_the_team_reward_is_their_sum():
    env = spread(max_cycles=3)
    env.seed(1)
    env.reset()
    world = env._env.unwrapped.world
    scenario = env._env.unwrapped.scenario
    ts = env.step(np.array([1, 2, 3]))
    global_reward = scenario.global_reward(world)
    local = np.array([scenario.reward(a, world) for a in world.agents])
    assert np.allclose(ts.info["agent_reward"], global_reward + local, atol=1e-5)
    assert ts.reward.shape == (1,) and ts.reward.dtype == np.float32
    assert ts.reward[0] == pytest.approx(ts.info["agent_reward"].sum(), rel=1e-5)
    env.close()


@pytest.mark.parametrize("terminal", (None, True, False))
def test_the_episode_ends_at_max_cycles_with_its_return_as_the_end_of_the_task(terminal):
    """Simple spread's end at max_cycles ends the task by default (DI-engine's env: done, not bootstrapped);
    ``truncation_is_terminal=False`` reports it as a truncation, which the learners bootstrap."""
    env = spread(max_cycles=4) if terminal is None else spread(max_cycles=4, truncation_is_terminal=terminal)
    env.seed(2)
    env.reset()
    total = 0.0
    for t in range(4):
        ts = env.step(np.zeros(3, np.int64))
        total += float(ts.reward[0])
        assert ts.done == (t == 3)
    assert ts.info["truncated"] is (terminal is False)
    assert ts.info["eval_episode_return"] == pytest.approx(total, rel=1e-5)
    env.close()


def test_mappo_does_not_bootstrap_past_simple_spreads_last_cycle():
    """Through MAPPO's transitions: the last step of a simple spread episode is terminal (``done``), so its GAE
    target is the reward alone; with ``truncation_is_terminal=False`` it bootstraps from the final observation."""
    for terminal in (True, False):
        env = spread(max_cycles=3, agent_specific_global_state=True, truncation_is_terminal=terminal)
        env.seed(5)
        obs = env.reset()
        torch.manual_seed(0)
        policy = create_policy(dict(type="ppo", multi_agent=True, model=dict(
            agent_obs_shape=18, global_obs_shape=48, action_shape=5, agent_num=3, actor_head_hidden_size=8,
            critic_head_hidden_size=8), learn=dict(epoch_per_collect=1, batch_size=8), collect=dict(n_sample=3)))
        chunk = []
        for _ in range(3):
            out = policy.collect_mode.forward({0: obs})[0]
            ts = env.step(out["action"])
            chunk.append(policy.collect_mode.process_transition(obs, out, ts))
            obs = ts.obs
        env.close()
        batch = policy._collate(policy.collect_mode.get_train_sample(chunk), "test")
        policy._set_targets(batch)
        last = batch["reward"][-1] - batch["value_old"][-1]  # delta of the last step without V(final obs)
        assert bool(batch["done"][-1].all()) is terminal
        assert torch.allclose(batch["adv"][-1], last, atol=1e-5) is terminal


def test_dynamic_seeds_vary_episodes_and_fixed_seeds_repeat_them():
    def first_obs(dynamic, resets=2):
        env = spread()
        env.seed(7, dynamic_seed=dynamic)
        obs = [env.reset()["agent_state"] for _ in range(resets)]
        env.close()
        return obs

    fixed, dynamic = first_obs(False), first_obs(True)
    assert np.array_equal(fixed[0], fixed[1]) and not np.array_equal(dynamic[0], dynamic[1])
    assert np.array_equal(dynamic[0], first_obs(True)[0])  # reproducible from the seed


def test_collectors_train_on_fresh_starts_and_evaluators_replay_theirs():
    """docs/multi_agent.md's training and evaluation starts: evaluator env i (seeded without dynamic seeds) starts every
    episode where seed + i puts it; a collector seeded with dynamic seeds (the pipelines' default) never starts there;
    one seeded without them (``dynamic_seed=False``, what DI-engine's env always does) replays it every episode."""
    from ding.envs import BaseEnvManager

    def starts(dynamic, episodes=3):
        manager = BaseEnvManager([spread, spread])
        manager.seed(4, dynamic_seed=dynamic)
        manager.launch()
        seen = {i: [manager.ready_obs[i]["agent_state"].copy()] for i in range(2)}
        while min(len(v) for v in seen.values()) < episodes:  # 5-cycle episodes, auto-reset
            for i, ts in manager.step({i: np.zeros(3, np.int64) for i in manager.ready_obs}).items():
                if ts.done and len(seen[i]) < episodes:
                    seen[i].append(manager.ready_obs[i]["agent_state"].copy())
        manager.close()
        return seen

    evaluator, pinned, fresh = starts(False), starts(False), starts(True)
    for i in range(2):
        assert all(np.array_equal(evaluator[i][0], o) for o in evaluator[i] + pinned[i])
        assert not any(np.array_equal(evaluator[i][0], o) for o in fresh[i])
        assert not np.array_equal(fresh[i][0], fresh[i][1])
    assert not np.array_equal(evaluator[0][0], evaluator[1][0])  # env i is seeded seed + i


def test_simple_spread_v2_runs_as_v3_with_one_notice(caplog, monkeypatch):
    monkeypatch.setattr(spread_module, "_noticed", False)
    cfg = dict(env_id="simple_spread_v2", n_agent=3, n_landmark=3, collector_env_num=4, evaluator_env_num=2)
    with caplog.at_level(logging.WARNING):
        cfgs = PettingZooEnv.create_collector_env_cfg(cfg) + PettingZooEnv.create_evaluator_env_cfg(cfg)
    assert [c["env_id"] for c in cfgs] == ["simple_spread_v3"] * 6
    assert sum("simple_spread_v2" in r.getMessage() for r in caplog.records) == 1
    assert ENV_REGISTRY.get("petting_zoo") is PettingZooEnv


def test_bad_env_configs_give_one_clear_error():
    with pytest.raises(ValueError, match=r"env\.env_id 'simple_tag_v3' is not one of"):
        spread(env_id="simple_tag_v3")
    with pytest.raises(ValueError, match=r"env\.n_agent is 3 and env\.n_landmark 2"):
        spread(n_landmark=2)
    env = spread()
    env.reset()
    with pytest.raises(ValueError, match=r"expected one action per agent \(3 agents"):
        env.step(np.zeros(2, np.int64))
    env.close()


def test_act_scale_maps_minus_one_to_one_onto_the_continuous_actions():
    """DI-engine's ``act_scale``: the agents act in [-1, 1] (what ``sac`` + ``multi_agent`` emits), mapped onto
    mpe2's [0, 1]; the same episode as the unscaled env given the mapped actions."""
    scaled, raw = spread(continuous_actions=True, act_scale=True), spread(continuous_actions=True)
    space = next(iter(scaled.action_space.values()))
    assert float(space.low.min()) == -1.0 and float(space.high.max()) == 1.0
    assert float(next(iter(raw.action_space.values())).low.min()) == 0.0
    for env in (scaled, raw):
        env.seed(3, dynamic_seed=False)
        env.reset()
    action = np.random.default_rng(0).uniform(-1, 1, (3, 5)).astype(np.float32)
    a, b = scaled.step(action), raw.step((action + 1) / 2)
    assert np.allclose(a.obs["agent_state"], b.obs["agent_state"]) and np.allclose(a.reward, b.reward)
    with pytest.raises(ValueError, match=r"env\.act_scale=True maps \[-1, 1\] onto continuous actions"):
        spread(act_scale=True)
    for env in (scaled, raw):
        env.close()


def test_general_parallel_adapter_and_an_aec_env_through_pettingzoos_conversion():
    for cfg in (dict(env_id="mpe2.simple_spread_v3", env_kwargs=dict(N=2, max_cycles=3)),
                dict(env_id="mpe2.simple_spread_v3", env_kwargs=dict(N=2, max_cycles=3), aec=True)):
        env = PettingZooParallelEnv(cfg)
        env.seed(0)
        obs = env.reset()
        assert env.agents == ["agent_0", "agent_1"]
        assert obs["agent_state"].shape == (2, 12) and obs["action_mask"].shape == (2, 5)
        assert obs["global_state"].shape == env.observation_space["global_state"].shape
        for _ in range(3):
            ts = env.step(env.random_action())
        assert ts.done and ts.info["truncated"] and ts.info["agent_reward"].shape == (2,)
        env.close()
    with pytest.raises(ImportError, match=r"pip install 'ding\[petting_zoo\]'"):
        PettingZooParallelEnv(dict(env_id="no_such_module_xyz")).reset()


MAPPO_MODEL = dict(agent_num=3, agent_obs_shape=18, global_obs_shape=48, action_shape=5)


@pytest.mark.parametrize("policy_cfg, env_cfg, message", [
    (dict(type="ppo", multi_agent=True, model=dict(MAPPO_MODEL, agent_num=2)), dict(agent_specific_global_state=True),
     r"policy\.model\.agent_num: 2 but the env has 3 agents"),
    (dict(type="ppo", multi_agent=True, model=dict(MAPPO_MODEL, agent_obs_shape=16)),
     dict(agent_specific_global_state=True), r"policy\.model\.agent_obs_shape: 16 but each agent .* observes 18"),
    (dict(type="ppo", multi_agent=True, model=MAPPO_MODEL), dict(),
     r"policy\.model\.global_obs_shape: 48 but the env's global_state has shape \(30,\)"),
    (dict(type="qmix", model=dict(agent_num=3, obs_shape=18, global_obs_shape=30, action_shape=5)),
     dict(agent_obs_only=True), r"needs DI-engine's multi-agent observation dict"),
    (dict(type="discrete_sac", model=dict(agent_obs_shape=18, global_obs_shape=30, action_shape=4)), dict(),
     r"policy\.model\.action_shape: 4 but the env's agents have 5 actions"),
])
def test_a_multi_agent_config_that_does_not_fit_the_env_gives_one_clear_error(policy_cfg, env_cfg, message):
    env = spread(**env_cfg)
    policy = create_policy(dict(policy_cfg, collect=dict(n_sample=8)))
    with pytest.raises(ConfigError, match=message):
        check_policy_fits_env(policy, env)
    env.close()


def test_a_fitting_multi_agent_config_passes_the_check():
    env = spread(agent_specific_global_state=True)
    check_policy_fits_env(create_policy(dict(type="ppo", multi_agent=True, model=MAPPO_MODEL,
                                             collect=dict(n_sample=8))), env)
    env.close()


def test_a_pickled_env_continues_its_episode_exactly():
    """Checkpoints pickle the envs mid-episode; PettingZoo's own pickling (EzPickle) would restart them."""
    import pickle

    env = spread(max_cycles=10)
    env.seed(3)
    env.reset()
    env.step(np.array([1, 2, 3]))
    copy = pickle.loads(pickle.dumps(env))
    rng = np.random.default_rng(0)
    for _ in range(9):
        action = rng.integers(0, 5, 3)
        a, b = env.step(action), copy.step(action)
        assert np.array_equal(a.obs["agent_state"], b.obs["agent_state"]) and a.reward == b.reward
    assert a.done and b.done and a.info["eval_episode_return"] == b.info["eval_episode_return"]
    assert np.array_equal(env.reset()["agent_state"], copy.reset()["agent_state"])  # the seed RNG too
    env.close()
    copy.close()


def test_a_classic_aec_game_as_a_battle_env():
    from dizoo.petting_zoo.envs import PettingZooBattleEnv, RandomLegalPlayer

    env = PettingZooBattleEnv(dict(env_id="pettingzoo.classic.tictactoe_v3"))
    env.seed(0)
    results = {"wins": 0, "losses": 0, "draws": 0}
    player = RandomLegalPlayer(9, seed=0)
    for game in range(20):
        obs = env.reset()
        assert obs.shape == (2, 28) == env.observation_space.shape
        mover = int(np.argmax(obs[:, -1]))
        assert mover == game % 2  # 'alternate': seat 0 moves first in even games
        done = False
        while not done:
            action = [player.forward({0: obs[i]})[0]["action"] for i in range(2)]
            ts = env.step(action)
            assert ts.info[mover]["acted"] and not ts.info[1 - mover]["acted"]
            obs, done, mover = ts.obs, ts.done, ts.info[0]["to_play"]
        assert ts.reward.sum() == 0 and ts.info[0]["eval_episode_return"] == -ts.info[1]["eval_episode_return"]
        results[ts.info[0]["result"]] += 1
    assert sum(results.values()) == 20 and results["wins"] and results["losses"]
    env.reset()
    ts = env.step([0, 0])
    ts = env.step([0, 0])  # the same square again: illegal, the mover loses
    assert ts.done and ts.info[int(np.argmax(ts.reward[:, 0] < 0))]["result"] == "losses"
    assert "random" in PettingZooBattleEnv.eval_opponents(dict(env_id="pettingzoo.classic.tictactoe_v3"))
    env.close()
