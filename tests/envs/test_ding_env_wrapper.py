"""DingEnvWrapper: done/truncated semantics, dtypes, returns, seeding, actions, replays, env factory."""
from __future__ import annotations

import copy
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding.envs import BaseEnvTimestep, DingEnvWrapper, InvalidActionError, create_env, get_env_cls, get_vec_env_setting
from ding.utils import ENV_WRAPPER_REGISTRY, ConfigError, EnvError, RegistryError


def balance(obs: np.ndarray) -> int:
    """Keeps CartPole up for hundreds of steps."""
    return int(3 * obs[2] + obs[3] > 0)


class Float64Env(gym.Env):
    """A gymnasium env with float64 observations and python-float rewards."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)
    action_space = gym.spaces.Discrete(3, start=1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.random(2), {}

    def step(self, action):
        return self.np_random.random(2), 0.5, False, False, {"a": action}


def test_time_limit_is_truncation_and_flag_on_every_step():
    env = DingEnvWrapper(gym.make("CartPole-v1", max_episode_steps=30))
    obs = env.reset()
    timesteps = []
    for _ in range(30):
        ts = env.step(balance(obs))
        obs = ts.obs
        timesteps.append(ts)
    assert all("truncated" in ts.info for ts in timesteps)
    assert [ts.done for ts in timesteps] == [False] * 29 + [True]
    assert timesteps[-1].info["truncated"] is True
    assert not any(ts.info["truncated"] for ts in timesteps[:-1])


def test_termination_is_not_truncation_and_return_is_reported():
    env = DingEnvWrapper(gym.make("CartPole-v1"))
    env.reset()
    total, ts = 0.0, None
    for _ in range(500):
        ts = env.step(1)  # always push right: the pole falls after a few steps
        total += float(ts.reward[0])
        if ts.done:
            break
    assert ts.done and ts.info["truncated"] is False
    assert ts.info["eval_episode_return"] == pytest.approx(total)
    assert isinstance(ts.info["eval_episode_return"], float)


def test_wrapper_max_episode_steps_truncates():
    env = DingEnvWrapper(cfg=dict(env_id="CartPole-v1", max_episode_steps=7))
    obs = env.reset()
    for k in range(7):
        ts = env.step(balance(obs))
        obs = ts.obs
    assert ts.done and ts.info["truncated"] and ts.info["eval_episode_return"] == 7.0
    with pytest.raises(EnvError, match="before reset"):
        env.step(0)


def test_obs_float32_and_reward_shape():
    env = DingEnvWrapper(Float64Env())
    assert env.observation_space.dtype == np.float32
    obs = env.reset()
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and obs.shape == (2,)
    ts = env.step(2)
    assert isinstance(ts, BaseEnvTimestep)
    assert ts.obs.dtype == np.float32
    assert ts.reward.dtype == np.float32 and ts.reward.shape == (1,) and ts.reward[0] == 0.5
    assert ts.info["a"] == 2 and ts.info["truncated"] is False
    assert env.reward_space.shape == (1,)


def _reset_obs(env: DingEnvWrapper, n: int) -> list[np.ndarray]:
    return [env.reset() for _ in range(n)]


def test_dynamic_seed_is_reproducible_and_varies():
    a, b, c = (DingEnvWrapper(gym.make("CartPole-v1")) for _ in range(3))
    a.seed(7)
    b.seed(7)
    c.seed(8)
    obs_a, obs_b, obs_c = _reset_obs(a, 3), _reset_obs(b, 3), _reset_obs(c, 3)
    assert all(np.array_equal(x, y) for x, y in zip(obs_a, obs_b))
    assert not np.array_equal(obs_a[0], obs_a[1])  # every reset draws a new seed
    assert not np.array_equal(obs_a[0], obs_c[0])


def test_static_seed_repeats_the_same_episode():
    env = DingEnvWrapper(gym.make("CartPole-v1"))
    env.seed(3, dynamic_seed=False)
    first, second = _reset_obs(env, 2)
    assert np.array_equal(first, second)
    ref = gym.make("CartPole-v1")
    assert np.array_equal(first, ref.reset(seed=3)[0])


def test_random_action_reproducible_after_seed():
    a, b = DingEnvWrapper(gym.make("CartPole-v1")), DingEnvWrapper(gym.make("CartPole-v1"))
    a.seed(1)
    b.seed(1)
    assert [a.random_action() for _ in range(20)] == [b.random_action() for _ in range(20)]


@pytest.mark.parametrize("action", [1, np.int64(1), np.array(1), np.array([1]), torch.tensor(1), torch.tensor([1])])
def test_discrete_action_forms(action):
    env = DingEnvWrapper(gym.make("CartPole-v1"))
    env.reset()
    assert env.step(action).obs.shape == (4,)


@pytest.mark.parametrize("action, match", [
    (2, r"action 2 is outside the action space Discrete\(2\)"),
    (-1, "outside the action space"),
    (0.5, "must be an integer"),
    (np.array([0, 1]), "must be an integer"),
])
def test_bad_discrete_action_names_env_action_and_space(action, match):
    env = DingEnvWrapper(gym.make("CartPole-v1"))
    env.reset()
    with pytest.raises(InvalidActionError, match=match) as info:
        env.step(action)
    assert "CartPole-v1" in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, EnvError)


def test_discrete_with_start_offset():
    env = DingEnvWrapper(Float64Env())  # Discrete(3, start=1): valid actions 1, 2, 3
    env.reset()
    env.step(3)
    with pytest.raises(InvalidActionError, match="1 <= action < 4"):
        env.step(0)


def test_box_actions_shape_nan_and_act_scale():
    env = DingEnvWrapper(gym.make("Pendulum-v1"), dict(act_scale=True))
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    env.reset()
    env.step(np.array([1.0], dtype=np.float32))
    assert env._env.unwrapped.last_u == pytest.approx(2.0)
    env.step(0.5)  # a scalar fits Box(1,)
    assert env._env.unwrapped.last_u == pytest.approx(1.0)
    env.step(np.array([-3.0]))  # clipped to [-1, 1] before scaling
    assert env._env.unwrapped.last_u == pytest.approx(-2.0)
    with pytest.raises(InvalidActionError, match=r"shape \(2,\) does not fit"):
        env.step(np.zeros(2))
    with pytest.raises(InvalidActionError, match="not finite"):
        env.step(np.array([np.nan]))


def test_env_from_cfg_and_missing_env_id():
    env = DingEnvWrapper(cfg=dict(env_id="CartPole-v1"))
    assert repr(env) == "DingEnvWrapper(CartPole-v1)"
    assert env.reset().shape == (4,)
    with pytest.raises(EnvError, match="cfg.env_id is not set"):
        DingEnvWrapper()
    with pytest.raises(EnvError, match="gym.make"):
        DingEnvWrapper(cfg=dict(env_id="NoSuchEnv-v9"))


def test_env_wrappers_callable_and_registry_name():
    calls = []

    def wrap(env):
        calls.append(env)
        return gym.wrappers.ClipReward(env, -0.25, 0.25)

    env = DingEnvWrapper(cfg=dict(env_id="CartPole-v1", env_wrapper=[wrap]))
    env.reset()
    assert len(calls) == 1 and env.step(0).reward[0] == 0.25
    ENV_WRAPPER_REGISTRY.register("test_clip_reward", wrap, force_overwrite=True)
    env = DingEnvWrapper(cfg=dict(env_id="CartPole-v1", env_wrapper="test_clip_reward"))
    env.reset()
    assert env.step(0).reward[0] == 0.25
    ENV_WRAPPER_REGISTRY.register("test_clip", gym.wrappers.ClipReward, force_overwrite=True)
    clip = dict(type="test_clip", kwargs=dict(max_reward=0.5))
    env = DingEnvWrapper(cfg=dict(env_id="CartPole-v1", env_wrapper=[clip]))
    env.reset()
    assert env.step(0).reward[0] == 0.5
    with pytest.raises(RegistryError, match="env.env_wrapper: unknown env_wrapper type 'test_clip_rewrd'"):
        DingEnvWrapper(cfg=dict(env_id="CartPole-v1", env_wrapper=["test_clip_rewrd"]))
    with pytest.raises(EnvError, match="env.env_wrapper: 3 is not a wrapper"):
        DingEnvWrapper(cfg=dict(env_id="CartPole-v1", env_wrapper=[3]))


def test_save_replay_errors(monkeypatch, tmp_path):
    env = DingEnvWrapper(gym.make("CartPole-v1"))
    with pytest.raises(EnvError, match="render_mode='rgb_array'"):
        env.enable_save_replay(str(tmp_path))
    monkeypatch.setitem(sys.modules, "moviepy", None)  # as if moviepy were not installed
    env = DingEnvWrapper(cfg=dict(env_id="CartPole-v1"))
    with pytest.raises(EnvError, match="moviepy"):
        env.enable_save_replay(str(tmp_path / "videos"))


def test_default_config_and_env_as_cfg_positional():
    cfg = DingEnvWrapper.default_config()
    assert cfg.cfg_type == "DingEnvWrapperDict" and cfg.env_wrapper == "default"
    env = DingEnvWrapper(dict(env_id="CartPole-v1"))  # env_fn(cfg) call form
    assert env.reset().shape == (4,)


def test_vec_env_setting_and_factory():
    cfg = dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"],
               collector_env_num=3, evaluator_env_num=2, nested=dict(x=1))
    before = copy.deepcopy(cfg)
    env_fn, col, ev = get_vec_env_setting(cfg)
    assert cfg == before
    assert env_fn is get_env_cls(cfg) and env_fn.__name__ == "CartPoleEnv"
    assert len(col) == 3 and len(ev) == 2 and all(c["is_train"] for c in col) and not any(c["is_train"] for c in ev)
    col[0]["nested"]["x"] = 5
    assert cfg["nested"]["x"] == 1 and col[1]["nested"]["x"] == 1
    assert get_vec_env_setting(cfg, collect=False)[1] is None
    assert get_vec_env_setting(cfg, eval_=False)[2] is None
    env = env_fn(col[0])
    assert env.reset().shape == (4,)
    assert create_env(cfg).observation_space.shape == (4,)


def test_env_type_errors():
    with pytest.raises(RegistryError, match=r"env.type: unknown env type 'cartpol'\. Did you mean 'cartpole'"):
        get_env_cls(dict(type="cartpol", import_names=["dizoo.classic_control.cartpole.envs"]))
    with pytest.raises(ConfigError, match="env.type: missing"):
        get_env_cls(dict(collector_env_num=1))
    with pytest.raises(RegistryError, match="cannot import module 'no_such_module'"):
        get_env_cls(dict(type="cartpole", import_names=["no_such_module"]))
