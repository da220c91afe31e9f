"""state_dict / load_state_dict: a restored manager continues the same episodes bit for bit."""
from __future__ import annotations

import pickle
from functools import partial

import numpy as np
import pytest

from ding.envs import create_env_manager
from ding.utils import EnvError
from dizoo.classic_control.cartpole.envs import CartPoleEnv

from .test_env_manager import FAST_CTX, MANAGERS, cartpole_policy, make


def cartpole_manager(kind: str, n: int = 3, **cfg):
    if kind != "base":
        cfg.setdefault("context", FAST_CTX)
    return create_env_manager(dict(type=kind, **cfg), [partial(CartPoleEnv, {}) for _ in range(n)])


def play(m, steps: int) -> dict[int, list]:
    """``steps`` manager steps with a deterministic policy; per env its (obs, reward, done) sequence."""
    out: dict[int, list] = {i: [] for i in range(m.env_num)}
    for _ in range(steps):
        obs = m.ready_obs
        for i, ts in m.step({i: cartpole_policy(o) for i, o in obs.items()}).items():
            out[i].append((ts.obs.copy(), float(ts.reward[0]), ts.done, ts.info.get("eval_episode_return")))
    return out


def same(a: dict[int, list], b: dict[int, list], async_: bool = False) -> bool:
    for i, x in a.items():
        y = b[i]
        if async_:  # async returns may be split differently between calls: compare the common prefix
            n = min(len(x), len(y))
            assert n > 20
            x, y = x[:n], y[:n]
        if len(x) != len(y):
            return False
        for (o1, r1, d1, e1), (o2, r2, d2, e2) in zip(x, y):
            if not (np.array_equal(o1, o2) and r1 == r2 and d1 == d2 and e1 == e2):
                return False
    return True


@pytest.mark.parametrize("kind", MANAGERS)
def test_restored_manager_continues_the_same_episodes(kind):
    with cartpole_manager(kind) as m:
        m.seed(0)
        m.launch()
        play(m, 40)  # several episodes in (dynamic seeds: each reset drew a new seed)
        state = pickle.loads(pickle.dumps(m.state_dict()))  # as a checkpoint would store it
        expected_random = [m.random_action() for _ in range(3)]
        expected = play(m, 60)
    with cartpole_manager(kind) as fresh:  # never launched: load_state_dict starts it
        fresh.load_state_dict(state)
        assert [fresh.random_action() for _ in range(3)] == expected_random
        got = play(fresh, 60)
    assert same(expected, got, async_=kind == "async_subprocess")
    assert any(d for seq in got.values() for (_, _, d, _) in seq)  # episodes ended and were re-seeded identically


def test_async_state_keeps_results_still_in_flight():
    cfgs = [dict(fault="slow", delay=0.2, length=50)] + [dict(length=50) for _ in range(2)]
    with make("async_subprocess", env_cfgs=cfgs, wait_num=2, step_wait_timeout=0.01) as m:
        m.seed(0)
        m.launch()
        m.step({0: 1, 1: 1, 2: 1})
        assert 0 not in m.ready_obs  # the slow env is still stepping
        state = m.state_dict()
        assert 0 in state["arrived"]
        with make("async_subprocess", env_cfgs=cfgs, wait_num=2) as fresh:
            fresh.load_state_dict(state)
            got = fresh.step({})
            assert 0 in got and got[0].obs[0] == 1.0  # the in-flight step is delivered after restore
        again = m.step({})
        assert np.array_equal(again[0].obs, got[0].obs) and again[0].reward == got[0].reward


def test_state_moves_between_manager_types():
    with cartpole_manager("base") as m:
        m.seed(1)
        m.launch()
        play(m, 25)
        state = m.state_dict()
        expected = play(m, 30)
    with cartpole_manager("subprocess") as sub:
        sub.launch()
        play(sub, 3)  # loading into a running manager replaces its envs and counters
        sub.load_state_dict(state)
        assert same(expected, play(sub, 30))


@pytest.mark.parametrize("kind", MANAGERS)
def test_unpicklable_env_is_a_clear_error(kind):
    with make(kind, env_cfgs=[dict(), dict(unpicklable=True)]) as m:
        m.launch()
        with pytest.raises(EnvError, match=r"(?s)env 1: cannot pickle .*a resumed run cannot restore it mid-episode"):
            m.state_dict()
        assert not m.closed  # the manager keeps working
        m.step({0: 0, 1: 0})


@pytest.mark.parametrize("kind", MANAGERS)
def test_state_of_another_size_or_shape_is_rejected(kind):
    with make(kind, n=2) as m:
        m.launch()
        state = m.state_dict()
    with make(kind, n=3) as other:
        with pytest.raises(EnvError, match="the state has 2 envs, this manager has 3"):
            other.load_state_dict(state)
        with pytest.raises(EnvError, match="not an env manager state_dict"):
            other.load_state_dict({"foo": 1})


def test_base_cannot_take_async_in_flight_results():
    cfgs = [dict(fault="slow", delay=0.2)] + [dict() for _ in range(2)]
    with make("async_subprocess", env_cfgs=cfgs, wait_num=1, step_wait_timeout=0.0) as m:
        m.launch()
        m.step({0: 1, 1: 1, 2: 1})
        state = m.state_dict()
    assert state["arrived"]
    with make("base", env_cfgs=[{} for _ in range(3)]) as b, \
            pytest.raises(EnvError, match="load it into an AsyncSubprocessEnvManager"):
        b.load_state_dict(state)
