"""dizoo/mujoco: gymnasium's v5 MuJoCo envs under DI-engine's env type, ids and normalisation keys."""
from __future__ import annotations

import importlib.util
import logging
import sys

import numpy as np
import pytest

from ding.envs import get_env_cls, get_vec_env_setting
from ding.utils import ConfigError, EnvError

MUJOCO = importlib.util.find_spec("mujoco") is not None
needs_mujoco = pytest.mark.skipif(not MUJOCO, reason="the mujoco extra is not installed (pip install -e '.[mujoco]')")


def make(**cfg):
    from dizoo.mujoco.envs import MujocoEnv

    return MujocoEnv(dict(env_id="Hopper-v5", **cfg))


def rollout(env, seed, n, actions_seed=123):
    env.seed(seed)
    obs = [env.reset()]
    rng = np.random.default_rng(actions_seed)
    steps = []
    for _ in range(n):
        ts = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        steps.append(ts)
        obs.append(ts.obs)
        if ts.done:
            obs.append(env.reset())
    return np.array(obs), steps


def test_registered_as_di_engine_s_mujoco_type_at_its_module_path():
    cls = get_env_cls(dict(type="mujoco", import_names=["dizoo.mujoco.envs.mujoco_env"]))
    assert cls.__name__ == "MujocoEnv" and cls.__module__ == "dizoo.mujoco.envs.mujoco_env"
    defaults = cls.default_config()
    assert defaults.norm_obs.use_norm is False and defaults.norm_reward.use_norm is False


@needs_mujoco
def test_di_engine_ids_map_to_v5_with_one_notice_line(caplog):
    import dizoo.mujoco.envs.mujoco_env as mod

    mod._NOTED.discard("Hopper-v3")
    with caplog.at_level(logging.WARNING, logger=mod.__name__):
        env_fn, collect, evaluate = get_vec_env_setting(dict(type="mujoco", env_id="Hopper-v3", collector_env_num=2,
                                                             evaluator_env_num=3, import_names=[mod.__name__]))
        envs = [env_fn(c) for c in collect + evaluate]
    notices = [r.getMessage() for r in caplog.records if "Hopper-v3" in r.getMessage()]
    assert len(notices) == 1 and "Hopper-v5" in notices[0]
    assert all(c["env_id"] == "Hopper-v5" for c in collect + evaluate) and len(envs) == 5
    assert repr(envs[0]) == "MujocoEnv(Hopper-v5)"
    assert mod.current_env_id("Hopper-v5") == "Hopper-v5" and mod.current_env_id("CartPole-v0") == "CartPole-v0"
    for e in envs:
        e.close()


@needs_mujoco
@pytest.mark.parametrize("env_id, obs_dim, act_dim", [("Hopper-v3", 11, 3), ("HalfCheetah-v3", 17, 6)])
def test_spaces_and_episode_semantics(env_id, obs_dim, act_dim):
    from dizoo.mujoco.envs import MujocoEnv

    env = MujocoEnv(dict(env_id=env_id))
    assert env.observation_space.shape == (obs_dim,) and env.observation_space.dtype == np.float32
    assert env.action_space.shape == (act_dim,) and float(env.action_space.high[0]) == 1.0
    obs, steps = rollout(env, 0, 60)
    assert obs.dtype == np.float32 and obs.shape[1] == obs_dim
    ts = steps[-1]
    assert ts.reward.shape == (1,) and ts.reward.dtype == np.float32 and "truncated" in ts.info
    env.close()


@needs_mujoco
def test_seeding_is_reproducible_and_seeds_differ():
    a, _ = rollout(make(), 3, 40)
    b, _ = rollout(make(), 3, 40)
    c, _ = rollout(make(), 4, 40)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[0], c[0])


@needs_mujoco
def test_reward_normalisation_trains_on_scaled_rewards_but_reports_the_raw_return():
    raw_env, norm_env = make(), make(norm_reward=dict(use_norm=True, reward_discount=0.99))
    _, raw = rollout(raw_env, 1, 200)
    _, norm = rollout(norm_env, 1, 200)  # same seed and actions: the same episodes
    raw_r = np.array([t.reward[0] for t in raw])
    norm_r = np.array([t.reward[0] for t in norm])
    assert not np.allclose(raw_r, norm_r)
    assert np.all(np.sign(raw_r[np.abs(raw_r) > 1e-3]) == np.sign(norm_r[np.abs(raw_r) > 1e-3]))  # a positive scale
    ends = [(a.info["eval_episode_return"], b.info["eval_episode_return"]) for a, b in zip(raw, norm) if a.done]
    assert ends and all(x == pytest.approx(y) for x, y in ends)
    start = 0
    for i, t in enumerate(raw):  # the reported return is the sum of the env's own rewards
        if t.done:
            assert t.info["eval_episode_return"] == pytest.approx(float(raw_r[start:i + 1].sum()), rel=1e-5)
            start = i + 1


@needs_mujoco
def test_observation_normalisation_is_raw_for_30_steps_then_clipped_to_three_std():
    raw, _ = rollout(make(), 2, 120)
    norm, _ = rollout(make(norm_obs=dict(use_norm=True)), 2, 120)
    np.testing.assert_array_equal(raw[:30], norm[:30])
    assert np.abs(norm[40:]).max() <= 3.0 and not np.allclose(raw[40:], norm[40:])
    assert np.abs(norm[40:]).mean() < np.abs(raw[40:]).mean() * 2  # standardised values, not the raw scale


@needs_mujoco
@pytest.mark.parametrize("clip", [True, False])
def test_action_clip_clips_what_the_simulator_is_given(clip):
    env = make(action_clip=clip)
    env.seed(5)
    env.reset()
    seen = []
    inner_step = env._env.step
    env._env.step = lambda a: (seen.append(np.array(a)), inner_step(a))[1]
    env.step(np.array([50.0, -0.5, -7.0], dtype=np.float32))
    expected = [1.0, -0.5, -1.0] if clip else [50.0, -0.5, -7.0]
    np.testing.assert_allclose(seen[0], expected)


@pytest.mark.parametrize("cfg, key", [
    (dict(norm_obs=dict(use_norm=True, offline_stats=dict(use_offline_stats=True))), "offline_stats"),
    (dict(delay_reward_step=5), "delay_reward_step"),
    (dict(save_replay_gif=True), "save_replay_gif"),
    (dict(action_bins_per_branch=5), "action_bins_per_branch"),
])
@needs_mujoco
def test_keys_ding_cannot_honour_are_refused_by_name(cfg, key):
    with pytest.raises(ConfigError, match=key):
        make(**cfg)


def test_a_missing_simulator_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    with pytest.raises(EnvError, match=r"pip install -e '\.\[mujoco\]'"):
        make()


@needs_mujoco
def test_reward_normalisation_is_raw_while_its_statistics_form_then_clipped_to_ten():
    """The first reward divided by the std of one sample was ~70x the raw reward: warm up, then clip."""
    _, raw = rollout(make(), 3, 300)
    _, norm = rollout(make(norm_reward=dict(use_norm=True, reward_discount=0.99)), 3, 300)
    raw_r = np.array([t.reward[0] for t in raw])
    norm_r = np.array([t.reward[0] for t in norm])
    np.testing.assert_array_equal(raw_r[:30], norm_r[:30])
    assert np.abs(norm_r).max() <= 10.0
    assert not np.allclose(raw_r[30:], norm_r[30:])
