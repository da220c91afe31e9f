"""dizoo envs: registry names and module paths, semantics of each env, configs that are not mutated."""
from __future__ import annotations

import copy
import importlib
import importlib.util
import sys

import gymnasium as gym
import numpy as np
import pytest

from ding.envs import BaseEnv, get_env_cls, get_vec_env_setting
from ding.utils import ENV_REGISTRY, EnvError

DIZOO = {
    "cartpole": ("dizoo.classic_control.cartpole.envs.cartpole_env", "CartPoleEnv", (4,), gym.spaces.Discrete(2)),
    "pendulum": ("dizoo.classic_control.pendulum.envs.pendulum_env", "PendulumEnv", (3,),
                 gym.spaces.Box(-1.0, 1.0, (1,), np.float32)),
    "acrobot": ("dizoo.classic_control.acrobot.envs.acrobot_env", "AcroBotEnv", (6,), gym.spaces.Discrete(3)),
    "mountain_car": ("dizoo.classic_control.mountain_car.envs.mtcar_env", "MountainCarEnv", (2,),
                     gym.spaces.Discrete(3)),
    "lunarlander": ("dizoo.box2d.lunarlander.envs.lunarlander_env", "LunarLanderEnv", (8,), gym.spaces.Discrete(4)),
}
CLASSIC = [k for k in DIZOO if k != "lunarlander"]


def _box2d_installed() -> bool:
    return importlib.util.find_spec("Box2D") is not None


@pytest.mark.parametrize("name", sorted(DIZOO))
def test_registered_under_di_engine_name_and_path(name):
    module, cls_name, _, _ = DIZOO[name]
    cls = get_env_cls(dict(type=name, import_names=[module]))
    assert cls.__name__ == cls_name and cls.__module__ == module and ENV_REGISTRY.get(name) is cls
    assert issubclass(cls, BaseEnv)
    package = module.rsplit(".", 1)[0]
    assert getattr(importlib.import_module(package), cls_name) is cls  # `import dizoo....envs` registers it
    cfg = cls.default_config()
    assert cfg.cfg_type == f"{cls_name}Dict" and "max_episode_steps" in cfg


@pytest.mark.parametrize("name", CLASSIC)
def test_classic_env_spaces_dtypes_and_time_limit(name):
    module, _, shape, act_space = DIZOO[name]
    env = get_env_cls(dict(type=name, import_names=[module]))({})
    assert env.observation_space.shape == shape and env.action_space == act_space
    env.seed(0)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.shape == shape
    limit = env.default_config().max_episode_steps
    for steps in range(1, limit + 1):  # random actions: the time limit ends these episodes (cartpole may fall first)
        ts = env.step(env.random_action())
        assert ts.reward.shape == (1,) and ts.reward.dtype == np.float32 and ts.obs.shape == shape
        if ts.done:
            break
    assert ts.done
    assert ts.info["truncated"] is (steps == limit)
    assert isinstance(ts.info["eval_episode_return"], float)
    env.close()


def test_cartpole_has_v0_semantics():
    from dizoo.classic_control.cartpole.envs import CartPoleEnv

    env = CartPoleEnv({})
    env.seed(0)
    obs = env.reset()
    for k in range(1, 201):
        ts = env.step(int(3 * obs[2] + obs[3] > 0))  # balances the pole
        obs = ts.obs
        assert ts.done is (k == 200)
    assert ts.info["truncated"] is True and ts.info["eval_episode_return"] == 200.0
    assert repr(env) == "CartPoleEnv(CartPole-v0)"


def test_cartpole_seeds_like_gymnasium():
    from dizoo.classic_control.cartpole.envs import CartPoleEnv

    env = CartPoleEnv({})
    env.seed(5, dynamic_seed=False)
    assert np.array_equal(env.reset(), gym.make("CartPole-v1").reset(seed=5)[0])


def test_pendulum_act_scale():
    from dizoo.classic_control.pendulum.envs import PendulumEnv

    env = PendulumEnv({})
    env.reset()
    env.step(np.array([0.5], dtype=np.float32))
    assert env._env.unwrapped.last_u == pytest.approx(1.0)  # [-1, 1] -> [-2, 2]
    raw = PendulumEnv(dict(act_scale=False))
    assert raw.action_space == gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    raw.reset()
    raw.step(np.array([0.5], dtype=np.float32))
    assert raw._env.unwrapped.last_u == pytest.approx(0.5)


def test_lunarlander_module_imports_without_box2d_and_says_how_to_install(monkeypatch):
    from dizoo.box2d.lunarlander.envs import LunarLanderEnv

    monkeypatch.setitem(sys.modules, "gymnasium.envs.box2d.lunar_lander", None)  # as if box2d were missing
    with pytest.raises(EnvError, match=r"pip install 'ding\[box2d\]'"):
        LunarLanderEnv({})


def test_lunarlander_runs_or_explains():
    from dizoo.box2d.lunarlander.envs import LunarLanderEnv

    if not _box2d_installed():  # the optional extra is not installed here: creating the env must say what to do
        with pytest.raises(EnvError, match=r"pip install 'ding\[box2d\]'"):
            LunarLanderEnv({})
        return
    env = LunarLanderEnv({})
    env.seed(0)
    assert env.reset().shape == (8,)
    assert env.step(0).reward.shape == (1,)
    env.close()


@pytest.mark.parametrize("name", sorted(DIZOO))
def test_create_env_cfgs_do_not_mutate_input(name):
    module = DIZOO[name][0]
    cfg = dict(type=name, import_names=[module], collector_env_num=2, evaluator_env_num=3, manager=dict(x=1))
    before = copy.deepcopy(cfg)
    _, col, ev = get_vec_env_setting(cfg)
    assert cfg == before and len(col) == 2 and len(ev) == 3
    col[0]["manager"]["x"] = 2
    assert cfg["manager"]["x"] == 1 and ev[0]["manager"]["x"] == 1
