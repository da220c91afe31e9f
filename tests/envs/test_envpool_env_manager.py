"""The 'env_pool' env manager: envpool's vectorised envs behind the env managers' surface (MuJoCo and Atari ids)."""
from __future__ import annotations

import importlib.util
import sys
from functools import partial

import numpy as np
import pytest

from ding.envs import create_env_manager
from ding.envs.env_manager.envpool_tasks import envpool_task
from ding.utils import ConfigError, EnvError

ENVPOOL = importlib.util.find_spec("envpool") is not None
MUJOCO = importlib.util.find_spec("mujoco") is not None
needs_envpool = pytest.mark.skipif(not ENVPOOL, reason="the envpool extra is not installed "
                                                       "(pip install -e '.[envpool]')")


class _Env:
    """Stands for an env class: the manager only reads the configs the pipelines bind to it."""

    def __init__(self, cfg):
        raise AssertionError("the env_pool manager must not build the envs itself")


def manager(env_id="Hopper-v3", n=3, manager_cfg=None, **env_cfg):
    fns = [partial(_Env, cfg=dict(env_id=env_id, **env_cfg)) for _ in range(n)]
    return create_env_manager(dict(type="env_pool", **(manager_cfg or {})), fns)


def test_without_envpool_one_error_names_the_extra_and_the_manager_to_use_instead(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)
    with pytest.raises(EnvError) as e:
        manager()
    assert "pip install -e '.[envpool]'" in str(e.value) and "type='subprocess'" in str(e.value)


def test_ids_map_to_envpool_tasks_with_ding_s_atari_keys():
    known = frozenset({"Pong-v5", "Hopper-v5", "Hopper-v3", "CartPole-v1"})
    train = envpool_task(dict(env_id="PongNoFrameskip-v4", frame_stack=4, is_train=True), known)
    evaluate = envpool_task(dict(env_id="PongNoFrameskip-v4", is_train=False, max_episode_frames=108000), known)
    assert train.task_id == "Pong-v5" and train.family == "atari"
    assert train.options["episodic_life"] and train.options["reward_clip"] and train.options["stack_num"] == 4
    assert not evaluate.options["episodic_life"] and not evaluate.options["reward_clip"]
    assert evaluate.options["max_episode_steps"] == 27000 and train.options["repeat_action_probability"] == 0.0
    assert envpool_task(dict(env_id="ALE/Pong-v5"), known).options["repeat_action_probability"] == 0.25
    hopper = envpool_task(dict(env_id="Hopper-v3"), known)
    assert (hopper.task_id, hopper.family) == ("Hopper-v5", "mujoco")  # the same v5 env as the 'mujoco' env type
    assert envpool_task(dict(env_id="CartPole-v1"), known).family == "other"
    with pytest.raises(ConfigError, match="type 'subprocess'"):
        envpool_task(dict(env_id="MyGame-v0"), known)
    with pytest.raises(ConfigError, match=r"env\.norm_obs\.use_norm"):
        envpool_task(dict(env_id="Hopper-v3", norm_obs=dict(use_norm=True)), known)


@needs_envpool
def test_mujoco_surface_step_subsets_and_immediate_reset():
    m = manager("Hopper-v3", n=3)
    with pytest.raises(EnvError, match="call launch"):
        m.ready_obs
    m.seed(0)
    m.launch()
    info = m.env_info()
    assert info["task_id"] == "Hopper-v5" and info["env_num"] == 3
    assert m.observation_space.shape == (11,) and m.observation_space.dtype == np.float32
    assert sorted(m.ready_obs) == [0, 1, 2] and m.ready_obs[0].dtype == np.float32
    ts = m.step({1: np.zeros(3, np.float32)})  # any subset of the ready envs
    assert list(ts) == [1] and ts[1].reward.shape == (1,) and ts[1].reward.dtype == np.float32
    with pytest.raises(EnvError, match="not ready"):
        m.step({7: np.zeros(3)})
    ends, returns = 0, {0: 0.0, 1: float(ts[1].reward[0]), 2: 0.0}
    while ends < 3:
        for i, t in m.step({i: np.full(3, 0.8, np.float32) for i in m.ready_obs}).items():
            returns[i] += float(t.reward[0])
            if t.done:
                ends += 1
                assert t.info["eval_episode_return"] == pytest.approx(returns[i], rel=1e-4, abs=1e-4)
                returns[i] = 0.0
                # reset at once: the new observation is a new episode's first (Hopper starts upright near 1.25)
                assert i in m.ready_obs and abs(float(m.ready_obs[i][0]) - 1.25) < 0.01
                assert not t.info["truncated"]
    m.close()
    m.close()
    assert m.closed


@needs_envpool
def test_seeds_reproduce_episodes_and_dynamic_seed_false_replays_them():
    def first_obs(seed, dynamic=True, resets=1):
        m = manager("Hopper-v5", n=2)
        m.seed(seed, dynamic_seed=dynamic)
        m.launch()
        out = []
        for _ in range(resets):
            m.step({i: np.full(3, 0.3, np.float32) for i in m.ready_obs})
            m.reset()
            out.append(np.stack([m.ready_obs[0], m.ready_obs[1]]))
        m.close()
        return out

    a, b, c = first_obs(4), first_obs(4), first_obs(5)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    fixed = first_obs(4, dynamic=False, resets=2)
    np.testing.assert_array_equal(fixed[0], fixed[1])  # the evaluator's seed: the same episodes every reset


@needs_envpool
def test_atari_ids_through_envpool_keep_uint8_stacks():
    m = manager("PongNoFrameskip-v4", n=2, frame_stack=4, is_train=False)
    m.seed(0)
    m.launch()
    assert m.task.options["episodic_life"] is False
    obs = m.ready_obs[0]
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    for _ in range(5):
        ts = m.step({i: 0 for i in m.ready_obs})
    assert ts[1].obs.dtype == np.uint8 and ts[1].reward.dtype == np.float32
    with pytest.raises(EnvError, match="outside the action space"):
        m.step({0: 17})
    m.close()


@needs_envpool
def test_config_errors_and_resume_state():
    with pytest.raises(ConfigError, match="batch_size"):
        manager("Hopper-v5", n=4, manager_cfg=dict(batch_size=2))
    with pytest.raises(ConfigError, match=r"env\.collector_batch_size=2"):
        manager("Hopper-v5", n=4, collector_env_num=4, collector_batch_size=2)
    with pytest.raises(ConfigError, match="unknown key"):
        manager("Hopper-v5", manager_cfg=dict(bacth_size=2))
    with pytest.raises(EnvError, match="partial"):
        create_env_manager(dict(type="env_pool"), [lambda: None])
    m = manager("Hopper-v5", n=2, manager_cfg=dict(shared_memory=False, max_retry=2))  # other managers' keys pass
    m.seed(3)
    m.launch()
    with pytest.raises(EnvError, match="replays"):
        m.enable_save_replay("somewhere")
    state = m.state_dict()
    m.close()
    fresh = manager("Hopper-v5", n=2)
    fresh.load_state_dict(state)
    assert not fresh.closed and sorted(fresh.ready_obs) == [0, 1] and fresh.state_dict()["seeds"] == [3, 4]
    fresh.close()


@needs_envpool
def test_a_pool_is_made_again_only_when_its_seeds_must_replay(monkeypatch):
    m = manager("Hopper-v5", n=2)
    made = []
    real_make = m._envpool.make
    monkeypatch.setattr(m._envpool, "make", lambda *a, **k: (made.append(k["env_seed"]), real_make(*a, **k))[1])
    m.seed(7, dynamic_seed=False)
    m.launch()
    m.reset()  # nothing stepped since the pool was made: its seeds are still ahead of it
    assert made == [[7, 8]]
    m.step({0: np.zeros(3, np.float32)})
    m.reset()
    assert made == [[7, 8], [7, 8]]
    m.seed(1)  # dynamic: one new pool for the new seeds, then episodes go on from there
    m.reset()
    m.step({0: np.zeros(3, np.float32)})
    m.reset()
    assert made == [[7, 8], [7, 8], [1, 2]]
    m.close()


def _lives_at_episode_ends(m, episodes: int, seed: int = 0) -> list[int]:
    """Lives left at the end of each of the first ``episodes`` training episodes of env 0 (random actions)."""
    rng = np.random.default_rng(seed)
    m.seed(seed)
    m.launch()
    out = []
    try:
        while len(out) < episodes:
            ts = m.step({i: int(rng.integers(0, 4)) for i in m.ready_obs})
            if 0 in ts and ts[0].done:
                out.append(int(ts[0].info["lives"]))
    finally:
        m.close()
    return out


@needs_envpool
@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ale-py is not installed "
                                                                      "(pip install -e '.[atari]')")
def test_a_lost_life_continues_the_game_on_envpool_as_on_the_atari_env():
    """Envpool's explicit reset restarted the whole Atari game after every lost life: every training episode ended
    at 4 lives and the agent never saw a later life. Restarted through envpool's autoreset, the lives go
    5 -> 4 -> ... -> game over -> 5 again, the same sequence the subprocess manager's atari env gives."""
    from dizoo.atari.envs.atari_env import AtariEnv

    pool = _lives_at_episode_ends(manager("BreakoutNoFrameskip-v4", n=2, is_train=True), 12)
    assert pool == [4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 4, 3], pool
    cfg = dict(env_id="BreakoutNoFrameskip-v4", is_train=True)
    sub = _lives_at_episode_ends(create_env_manager(dict(type="subprocess"), [partial(AtariEnv, cfg=cfg)] * 2), 12)
    assert sub == pool
