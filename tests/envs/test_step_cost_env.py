"""The benchmark env of parallel mode: CartPole whose step costs CPU work or a wait (cartpole_step_cost)."""
from __future__ import annotations

import copy
import time

import numpy as np
import pytest

from ding.config import compile_config
from ding.envs import get_env_cls
from ding.utils import ENV_REGISTRY, ConfigError
from dizoo.classic_control.cartpole.envs import CartPoleEnv, StepCostCartPoleEnv

MODULE = "dizoo.classic_control.cartpole.envs.step_cost_cartpole_env"


def _steps(env, n):
    env.seed(0)
    env.reset()
    for _ in range(n):
        if env.step(0).done:
            env.reset()


def test_registered_and_plain_cartpole_underneath():
    assert get_env_cls(dict(type="cartpole_step_cost", import_names=[MODULE])) is StepCostCartPoleEnv
    assert ENV_REGISTRY.get("cartpole_step_cost") is StepCostCartPoleEnv
    cost, plain = StepCostCartPoleEnv(dict(step_cost_ms=0)), CartPoleEnv({})
    for env in (cost, plain):
        env.seed(3, dynamic_seed=False)
    a, b = cost.reset(), plain.reset()
    for _ in range(20):  # same dynamics, observations and rewards as CartPole-v0
        np.testing.assert_array_equal(a, b)
        ta, tb = cost.step(1), plain.step(1)
        a, b = ta.obs, tb.obs
        assert ta.reward == tb.reward and ta.done == tb.done
        if ta.done:
            break


@pytest.mark.parametrize("kind", ["cpu", "wait"])
def test_each_step_costs_the_configured_time(kind):
    env = StepCostCartPoleEnv(dict(step_cost_ms=5, step_cost_kind=kind))
    cpu0, t0 = time.thread_time(), time.perf_counter()
    _steps(env, 20)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - t0
    assert wall >= 20 * 0.005  # at least the configured cost per step (no upper bound: the machine may be loaded)
    if kind == "cpu":
        assert cpu >= 20 * 0.005  # busy work: the thread's own CPU time
    else:
        assert cpu < 20 * 0.005 / 2  # a sleep: (almost) no CPU


def test_zero_cost_is_plain_cartpole_speed():
    env = StepCostCartPoleEnv(dict(step_cost_ms=0, step_cost_kind="cpu"))
    assert "0 ms" in repr(env)
    cpu0 = time.thread_time()
    _steps(env, 5)
    assert time.thread_time() - cpu0 < 0.5


@pytest.mark.parametrize("cfg, match", [
    (dict(step_cost_kind="gpu"), r"env.step_cost_kind: 'gpu'.*'cpu'.*'wait'"),
    (dict(step_cost_ms=-1), r"env.step_cost_ms: .*>= 0, got -1"),
    (dict(step_cost_ms="2"), r"env.step_cost_ms: .*got '2'"),
    (dict(step_cost_ms=float("nan")), r"env.step_cost_ms"),
])
def test_bad_cost_is_one_clear_error(cfg, match):
    with pytest.raises(ConfigError, match=match):
        StepCostCartPoleEnv(cfg)


def test_config_compile_names_the_bad_kind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main = copy.deepcopy(main_config)
    main.env.step_cost_kind = "sleep"
    create = copy.deepcopy(create_config)
    create.env = dict(type="cartpole_step_cost", import_names=[MODULE])
    with pytest.raises(ConfigError, match=r"step_cost_kind.*sleep"):
        compile_config(main, create_cfg=create, seed=0, auto=True, save_cfg=False)
