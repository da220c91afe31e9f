"""Env manager fault handling: envs that raise, hang, die or return bad observations; bad actions; Ctrl-C."""
from __future__ import annotations

import multiprocessing as mp
import re
import time

import numpy as np
import pytest

from ding.envs import InvalidActionError
from ding.utils import EnvError

from .test_env_manager import MANAGERS, make

SUBPROCESS = ["subprocess", "async_subprocess"]


def step_until_done(m, max_steps: int = 500) -> dict[int, list]:
    """Step every ready env with action 1 until the manager is done; per env its timesteps."""
    out: dict[int, list] = {i: [] for i in range(m.env_num)}
    for _ in range(max_steps):
        if m.done:
            return out
        for i, ts in m.step({i: 1 for i in m.ready_obs_id}).items():
            out[i].append(ts)
    raise AssertionError("the manager did not finish")


@pytest.mark.parametrize("kind", MANAGERS)
def test_env_raising_in_step_is_an_error_naming_the_env_with_its_traceback(kind):
    cfgs = [dict(), dict(fault="raise", at=2)]
    m = make(kind, env_cfgs=cfgs)
    m.launch()
    with pytest.raises(EnvError) as info:
        step_until_done(m)
    msg = str(info.value)
    assert re.search(r"env 1: step failed 1 time\(s\) \(max_retry=1", msg)
    assert "RuntimeError: boom at step 2" in msg and "Traceback" in msg
    assert m.closed and mp.active_children() == []


@pytest.mark.parametrize("kind", MANAGERS)
def test_env_raising_in_reset_fails_launch(kind):
    m = make(kind, env_cfgs=[dict(), dict(fault="raise", fault_reset=True)])
    with pytest.raises(EnvError, match=r"(?s)env 1: reset failed 1 time\(s\).*boom"):
        m.launch()
    assert m.closed


@pytest.mark.parametrize("kind", MANAGERS)
@pytest.mark.parametrize("retry_type", ["reset", "renew"])
def test_a_failed_step_is_retried_and_reported_as_abnormal(kind, retry_type, tmp_path):
    cfgs = [dict(length=4), dict(length=4, fault="raise", at=2, marker=str(tmp_path / "once"))]
    with make(kind, env_cfgs=cfgs, episode_num=2, max_retry=2, retry_type=retry_type, retry_waiting_time=0) as m:
        m.launch()
        traj = step_until_done(m)
    abnormal = [ts for ts in traj[1] if ts.info.get("abnormal")]
    assert len(abnormal) == 1 and abnormal[0].done and "boom at step 2" in abnormal[0].info["error"]
    assert abnormal[0].obs[0] == 1.0  # the observation the failed action was taken on
    normal_ends = [ts for ts in traj[1] if ts.done and not ts.info.get("abnormal")]
    assert len(normal_ends) == 2 and all(ts.info["eval_episode_return"] > 0 for ts in normal_ends)
    assert len([ts for ts in traj[0] if ts.done]) == 2


@pytest.mark.parametrize("kind", MANAGERS)
def test_an_env_that_always_fails_still_ends_in_an_error(kind):
    with make(kind, env_cfgs=[dict(fault="raise", at=1)], max_retry=3, retry_waiting_time=0) as m:
        m.launch()
        with pytest.raises(EnvError, match=r"env 0: step failed 3 time\(s\) \(max_retry=3"):
            step_until_done(m)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", MANAGERS)
def test_a_hung_step_is_stopped_at_step_timeout(kind):
    m = make(kind, env_cfgs=[dict(), dict(fault="hang", at=2)], step_timeout=0.5)
    m.launch()
    start = time.monotonic()
    with pytest.raises(EnvError, match=r"(?s)env 1: step failed 1 time\(s\).*did not finish within 0.5s"):
        step_until_done(m)
    assert time.monotonic() - start < 5.0
    assert m.closed and mp.active_children() == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", MANAGERS)
def test_a_hung_env_is_rebuilt_when_retries_remain(kind, tmp_path):
    cfgs = [dict(), dict(fault="hang", at=2, marker=str(tmp_path / "once"))]
    with make(kind, env_cfgs=cfgs, step_timeout=0.5, max_retry=2, episode_num=2, retry_waiting_time=0) as m:
        m.launch()
        start = time.monotonic()
        traj = step_until_done(m)
        assert time.monotonic() - start < 5.0
    assert sum(bool(ts.info.get("abnormal")) for ts in traj[1]) == 1
    assert sum(ts.done and not ts.info.get("abnormal") for ts in traj[1]) == 2


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", MANAGERS)
def test_a_hung_reset_is_stopped_at_reset_timeout(kind):
    m = make(kind, env_cfgs=[dict(), dict(fault="hang", fault_reset=True)], reset_timeout=0.5)
    start = time.monotonic()
    with pytest.raises(EnvError, match=r"(?s)env 1: reset failed.*did not finish within 0.5s"):
        m.launch()
    assert time.monotonic() - start < 5.0 and mp.active_children() == []


@pytest.mark.timeout(30)
def test_in_process_limits_use_helper_threads_only_when_set_and_close_them():
    """Without a limit the base manager calls the env directly; with one, each env gets a helper thread that
    close() ends, and an overrunning env is left to its helper thread (closed there), never touched again."""
    import threading

    earlier = set(threading.enumerate())  # helper threads of earlier tests' hung envs may still be sleeping

    def helpers():
        return [t for t in threading.enumerate() if t.name.startswith("BaseEnvManager-env") and t not in earlier]

    with make("base", n=2) as m:
        m.launch()
        m.step({i: 1 for i in m.ready_obs_id})
        assert helpers() == []
    m = make("base", env_cfgs=[dict(), dict(fault="hang", at=1)], step_timeout=0.3, max_retry=2,
             retry_waiting_time=0)
    m.launch()
    assert helpers() == []  # only steps are limited
    out = m.step({0: 1, 1: 1})
    assert len(helpers()) == 2  # env 0 and the abandoned env 1 (the rebuilt env 1 has only been reset)
    assert out[1].info["abnormal"] and "env 1: step did not finish within 0.3s" in out[1].info["error"]
    assert "env.manager.step_timeout=0.3" in out[1].info["error"]
    m.close()
    deadline = time.monotonic() + 5
    while [t for t in helpers() if t.is_alive() and "env0" in t.name] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [t.name for t in helpers() if t.is_alive()] == ["BaseEnvManager-env1"]  # still inside the hung step


@pytest.mark.parametrize("kind", SUBPROCESS)
def test_a_dying_worker_is_reported(kind):
    m = make(kind, env_cfgs=[dict(), dict(fault="die", at=2)])
    m.launch()
    with pytest.raises(EnvError, match=r"(?s)env 1: step failed 1 time\(s\).*died \(exit code 3\)"):
        step_until_done(m)
    assert m.closed and mp.active_children() == []


@pytest.mark.parametrize("kind", SUBPROCESS)
def test_a_dying_worker_is_restarted_when_retries_remain(kind, tmp_path):
    cfgs = [dict(), dict(fault="die", at=2, marker=str(tmp_path / "once"))]
    with make(kind, env_cfgs=cfgs, max_retry=2, episode_num=2, retry_waiting_time=0) as m:
        m.launch()
        traj = step_until_done(m)
    abnormal = [ts for ts in traj[1] if ts.info.get("abnormal")]
    assert len(abnormal) == 1 and "died (exit code 3)" in abnormal[0].info["error"]
    assert sum(ts.done and not ts.info.get("abnormal") for ts in traj[1]) == 2


@pytest.mark.parametrize("kind", MANAGERS)
@pytest.mark.parametrize("at_reset", [False, True])
def test_observation_of_wrong_shape_is_an_error(kind, at_reset):
    cfg = dict(fault="bad_shape", at=2, fault_reset=at_reset)
    m = make(kind, env_cfgs=[dict(), cfg])
    op = "reset" if at_reset else "step"
    pattern = rf"env 1: {op}\(\) returned an observation of shape \(5,\), but its observation_space .* expects \(3,\)"
    with pytest.raises(EnvError, match=pattern):
        m.launch()
        step_until_done(m)
    assert m.closed


@pytest.mark.parametrize("kind", MANAGERS)
def test_invalid_action_is_not_retried_and_keeps_the_manager_usable(kind):
    with make(kind, n=2, max_retry=3) as m:
        m.launch()
        with pytest.raises(InvalidActionError, match="action 5 is outside the action space"):
            m.step({0: 5, 1: 0})
        assert not m.closed
        for _ in range(3):  # env 0 is still waiting for an action; env 1's step result may come now
            if 0 in m.ready_obs_id:
                break
            m.step({})
        assert 0 in m.ready_obs_id
        m.step({0: 1})


class _InterruptOnPickle:
    def __reduce__(self):
        raise KeyboardInterrupt


@pytest.mark.parametrize("kind", SUBPROCESS)
def test_ctrl_c_during_step_stops_every_worker(kind):
    m = make(kind, n=2)
    m.launch()
    with pytest.raises(KeyboardInterrupt):
        m.step({0: _InterruptOnPickle(), 1: np.int64(0)})
    assert m.closed and mp.active_children() == []


def test_a_dead_spawned_worker_is_restarted(tmp_path):
    cfgs = [dict(), dict(fault="die", at=2, marker=str(tmp_path / "once"))]
    with make("subprocess", env_cfgs=cfgs, context="spawn", max_retry=2, episode_num=1, retry_waiting_time=0) as m:
        m.seed(0)
        m.launch()
        traj = step_until_done(m)
    assert sum(bool(ts.info.get("abnormal")) for ts in traj[1]) == 1
    assert sum(ts.done and not ts.info.get("abnormal") for ts in traj[1]) == 1
