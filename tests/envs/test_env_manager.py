"""Env managers (base, subprocess, async_subprocess): same episodes for every type, interface, config, seeding."""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from functools import partial

import gymnasium as gym
import numpy as np
import pytest

from ding.envs import (
    AsyncSubprocessEnvManager,
    BaseEnvManager,
    DingEnvWrapper,
    EnvState,
    SyncSubprocessEnvManager,
    create_env_manager,
    get_env_manager_cls,
)
from ding.utils import ConfigError, EnvError, RegistryError
from dizoo.classic_control.cartpole.envs import CartPoleEnv

from ._faulty_envs import CounterEnv, policy

MANAGERS = ["base", "subprocess", "async_subprocess"]
FAST_CTX = "fork"  # most subprocess tests fork (fast); the main comparison also runs with the default 'spawn'


def make(manager_type: str, n: int = 3, env_cfg: dict | None = None, env_cfgs: list | None = None, **cfg):
    cfgs = env_cfgs or [dict(env_cfg or {}) for _ in range(n)]
    if manager_type != "base":
        cfg.setdefault("context", FAST_CTX)
    return create_env_manager(dict(type=manager_type, **cfg), [partial(CounterEnv, c) for c in cfgs])


def cartpole_policy(obs: np.ndarray) -> int:
    return int(obs[0] + obs[2] > 0)  # deterministic and poor: short episodes of different lengths


def run_episodes(manager, act) -> dict[int, list]:
    """Step until done; per env the list of (obs, reward, done, return) of every returned timestep."""
    traj: dict[int, list] = {i: [] for i in range(manager.env_num)}
    for _ in range(10_000):
        if manager.done:
            break
        obs = manager.ready_obs
        for i, ts in manager.step({i: act(o) for i, o in obs.items()}).items():
            traj[i].append((ts.obs, float(ts.reward[0]), ts.done, ts.info.get("eval_episode_return")))
    assert manager.done
    return traj


@pytest.mark.parametrize("context", ["spawn", "fork"])
def test_every_manager_type_runs_the_same_cartpole_episodes(context):
    results = {}
    for kind in MANAGERS:
        cfg = dict(type=kind, episode_num=2)
        if kind != "base":
            cfg["context"] = context
        with create_env_manager(cfg, [partial(CartPoleEnv, {}) for _ in range(4)]) as m:
            m.seed(0)
            m.launch()
            results[kind] = run_episodes(m, cartpole_policy)
            assert m.ready_obs == {} and m.env_states == [EnvState.DONE] * 4
    base = results["base"]
    returns = {k: {i: [t[3] for t in r[i] if t[2]] for i in r} for k, r in results.items()}
    assert all(len(v) == 2 for v in returns["base"].values())
    assert len({tuple(v) for v in returns["base"].values()}) > 1  # the envs play different episodes
    for kind in ("subprocess", "async_subprocess"):
        assert returns[kind] == returns["base"]
        for i in range(4):  # identical observations and rewards, step by step, per env
            assert len(results[kind][i]) == len(base[i])
            for (o1, r1, d1, _), (o2, r2, d2, _) in zip(base[i], results[kind][i]):
                assert np.array_equal(o1, o2) and r1 == r2 and d1 == d2


@pytest.mark.parametrize("kind", MANAGERS)
def test_seed_int_gives_env_i_seed_plus_i(kind):
    with make(kind, n=3) as m:
        m.seed(10)
        m.launch()
        first = m.ready_obs
    for i in range(3):
        ref = CounterEnv({})
        ref.seed(10 + i)
        assert np.array_equal(first[i], ref.reset())
    with make(kind, n=3) as m:
        m.seed([10, 11, 12], dynamic_seed=False)
        m.launch()
        for i, o in m.ready_obs.items():
            ref = CounterEnv({})
            ref.seed(10 + i, dynamic_seed=False)
            assert np.array_equal(o, ref.reset()) and not np.array_equal(o, first[i])
        with pytest.raises(EnvError, match="got 2 seeds for 3 envs"):
            m.seed([1, 2])
        with pytest.raises(EnvError, match="expected an int or a list"):
            m.seed("1")


@pytest.mark.parametrize("kind", MANAGERS)
def test_auto_reset_keeps_terminal_obs_and_counts_episodes(kind):
    with make(kind, n=2, env_cfg=dict(length=3), episode_num=2) as m:
        m.launch()
        assert sorted(m.ready_obs_id) == [0, 1]
        seen_done = {0: 0, 1: 0}
        for _ in range(50):
            if m.done:
                break
            for i, ts in m.step({i: 1 for i in m.ready_obs_id}).items():
                if ts.done:
                    seen_done[i] += 1
                    assert ts.obs[0] == 3.0  # the terminal observation, not the next episode's first
                    assert ts.info["eval_episode_return"] > 0
                    if seen_done[i] < 2:  # reset at once: the new episode is ready (async: once its reset ran)
                        if kind == "async_subprocess" and i not in m.ready_obs:
                            assert m.env_states[i] == EnvState.RESET
                        else:
                            assert m.ready_obs[i][0] == 0.0
                    else:
                        assert i not in m.ready_obs
        assert seen_done == {0: 2, 1: 2} and m.done
        assert m.step({}) == {}


@pytest.mark.parametrize("kind", MANAGERS)
def test_no_auto_reset_waits_for_reset_call(kind):
    with make(kind, n=2, env_cfg=dict(length=2), auto_reset=False) as m:
        m.launch()
        for _ in range(2):
            ts = m.step({0: 0})
            while 0 not in ts:  # async may answer later
                ts = m.step({})
        assert ts[0].done and 0 not in m.ready_obs and m.env_states[0] == EnvState.NEED_RESET
        with pytest.raises(EnvError, match=r"env 0 is NEED_RESET \(not waiting for an action\)"):
            m.step({0: 0})
        m.reset({0: {}})
        assert m.ready_obs[0][0] == 0.0 and not m.done


@pytest.mark.parametrize("kind", MANAGERS)
def test_step_rejects_envs_that_are_not_ready(kind):
    with make(kind, n=2) as m:
        m.launch()
        with pytest.raises(EnvError, match=r"7 is not an env id \(0\.\.1\).*ready_obs_id = \[0, 1\]"):
            m.step({7: 0})
        with pytest.raises(EnvError, match="takes a dict"):
            m.step([0, 1])
        assert len(m.step({0: 1, 1: 0})) >= 1


@pytest.mark.parametrize("kind", MANAGERS)
def test_lifecycle_close_twice_context_manager_and_closed_use(kind):
    m = make(kind, n=2)
    with pytest.raises(EnvError, match="call launch"):
        m.step({0: 0})
    with m:
        m.launch()
        assert not m.closed
        with pytest.raises(EnvError, match="already launched"):
            m.launch()
    assert m.closed and mp.active_children() == []
    m.close()
    m.close()
    with pytest.raises(EnvError, match="call launch"):
        _ = m.ready_obs
    m.launch()  # a closed manager can be launched again
    assert sorted(m.ready_obs) == [0, 1]
    m.close()


@pytest.mark.parametrize("kind", MANAGERS)
def test_spaces_and_random_action(kind):
    with make(kind, n=3) as m:
        assert m.observation_space.shape == (3,) and m.action_space == gym.spaces.Discrete(2)
        assert m.reward_space.shape == (1,) and m.env_num == 3
        m.seed(0)
        m.launch()
        acts = m.random_action()
        assert sorted(acts) == [0, 1, 2] and all(a in (0, 1) for a in acts.values())
        m.step(acts)


def test_random_actions_agree_across_manager_types():
    draws = {}
    for kind in MANAGERS:
        cfg = dict(type=kind) if kind == "base" else dict(type=kind, context=FAST_CTX)
        with create_env_manager(cfg, [partial(CartPoleEnv, {}) for _ in range(3)]) as m:
            m.seed(4)
            m.launch()
            draws[kind] = [m.random_action() for _ in range(20)]
    assert draws["base"] == draws["subprocess"] == draws["async_subprocess"]
    assert len({tuple(d.values()) for d in draws["base"]}) > 1


@pytest.mark.parametrize("kind", MANAGERS)
def test_enable_save_replay_gives_each_env_its_folder(kind, tmp_path):
    with make(kind, n=2) as m:
        m.enable_save_replay(str(tmp_path))
        m.launch()
        for i in range(2):
            assert os.path.exists(tmp_path / f"env_{i}" / "enabled")
        m.enable_save_replay([str(tmp_path / "a"), str(tmp_path / "b")])  # while running
        assert os.path.exists(tmp_path / "b" / "enabled")
        with pytest.raises(EnvError, match="got 1 paths for 2 envs"):
            m.enable_save_replay([str(tmp_path)])


@pytest.mark.parametrize("kind", MANAGERS)
def test_unknown_config_key_is_an_error(kind):
    cls = get_env_manager_cls(dict(type=kind))
    with pytest.raises(ConfigError, match=r"env.manager.episode_nm: unknown key .*did you mean 'episode_num'"):
        cls([partial(CounterEnv, {})], dict(episode_nm=3))
    with pytest.raises(ConfigError, match="retry_type: 'again' is not 'reset' or 'renew'"):
        cls([partial(CounterEnv, {})], dict(retry_type="again"))
    with pytest.raises(EnvError, match="non-empty list of callables"):
        cls([], {})
    cfg = cls.default_config()
    assert cfg.cfg_type == f"{cls.__name__}Dict" and cfg.episode_num == float("inf")


def test_default_configs_and_registry():
    assert get_env_manager_cls({}) is BaseEnvManager
    assert get_env_manager_cls(dict(type="subprocess")) is SyncSubprocessEnvManager
    assert get_env_manager_cls(dict(type="async_subprocess")) is AsyncSubprocessEnvManager
    sub = SyncSubprocessEnvManager.default_config()
    assert sub.shared_memory is True and sub.context == "spawn" and sub.step_timeout > 0
    assert "wait_num" not in sub and "shared_memory" not in BaseEnvManager.default_config()
    asy = AsyncSubprocessEnvManager.default_config()
    assert asy.wait_num >= 1 and asy.step_wait_timeout is not None
    # keys of the other manager types are accepted so one env.manager dict works for every type
    BaseEnvManager([partial(CounterEnv, {})], dict(shared_memory=True, wait_num=3))
    with pytest.raises(ConfigError, match="env.manager.context: 'fourk'"):
        SyncSubprocessEnvManager([partial(CounterEnv, {})], dict(context="fourk"))
    with pytest.raises(ConfigError, match="wait_num: must be >= 1"):
        AsyncSubprocessEnvManager([partial(CounterEnv, {})], dict(wait_num=0))


def test_create_env_manager_type_and_import_names():
    with pytest.raises(RegistryError, match=r"env.manager.type: unknown env_manager type 'subproces'.*'subprocess'"):
        create_env_manager(dict(type="subproces"), [partial(CounterEnv, {})])
    m = create_env_manager(dict(type="test_custom_manager", import_names=["tests.envs._custom_manager"]),
                           [partial(CounterEnv, {})])
    assert type(m).__name__ == "CustomManager"


@pytest.mark.parametrize("shared_memory", [True, False])
def test_subprocess_shared_memory_on_and_off_agree(shared_memory):
    with make("subprocess", n=2, shared_memory=shared_memory, episode_num=1) as m:
        m.seed(3)
        m.launch()
        traj = run_episodes(m, policy)
    with make("base", n=2, episode_num=1) as b:
        b.seed(3)
        b.launch()
        ref = run_episodes(b, policy)
    for i in range(2):
        assert all(np.array_equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(traj[i], ref[i]))


def test_workers_use_passive_omp_waits_and_one_torch_thread(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with make("subprocess", n=1, env_cfg=dict(report_worker=True)) as m:
        m.launch()
        for _ in range(2):
            info = m.step({0: 0})[0].info
            assert info["omp_wait_policy"] == "PASSIVE" and info["torch_threads"] == 1


def test_spawned_workers_accept_a_lambda_env_fn():
    fns = [lambda: DingEnvWrapper(gym.make("CartPole-v1")) for _ in range(2)]
    with SyncSubprocessEnvManager(fns, dict(context="spawn")) as m:
        m.seed(0)
        m.launch()
        assert m.ready_obs[1].shape == (4,)
        assert set(m.step({0: 0, 1: 1})) == {0, 1}


def test_async_returns_without_waiting_for_a_slow_env():
    cfgs = [dict(fault="slow", delay=0.4, length=50)] + [dict(length=50) for _ in range(3)]
    with make("async_subprocess", env_cfgs=cfgs, wait_num=3, step_wait_timeout=0.05) as m:
        m.launch()
        start = time.perf_counter()
        first = m.step({i: 0 for i in range(4)})
        assert time.perf_counter() - start < 0.3 and 0 not in first and len(first) >= 1
        with pytest.raises(EnvError, match=r"env 0 is RUN \(not waiting for an action\)"):
            m.step({0: 0})
        got = set(first)
        deadline = time.monotonic() + 5.0
        while 0 not in got and time.monotonic() < deadline:
            got |= set(m.step({i: 0 for i in m.ready_obs_id if i != 0}))
        assert 0 in got  # the slow env's result arrives with a later step
