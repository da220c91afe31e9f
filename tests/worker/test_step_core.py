"""EnvStepCore: the one observe -> act -> step block of the serial collectors and evaluators."""
from __future__ import annotations

import numpy as np

from ding.envs.env.base_env import BaseEnvTimestep
from ding.worker.collector.step_core import EnvStepCore


class _Manager:
    """Envs 0..n-1 all ready; ``step`` answers each action with obs = action + 10."""

    def __init__(self, n: int = 3) -> None:
        self.ready_obs = {i: np.full(2, i, np.float32) for i in range(n)}
        self.sent: list[dict] = []

    def step(self, actions):
        self.sent.append(dict(actions))
        return {i: BaseEnvTimestep(np.full(2, a + 10, np.float32), np.zeros(1, np.float32), False, {})
                for i, a in actions.items()}


def _forward(obs, scale=1):
    return {i: {"action": int(o[0]) * scale} for i, o in obs.items()}


def test_step_acts_in_every_ready_env_and_keeps_what_was_sent():
    env = _Manager()
    core = EnvStepCore(env)
    timesteps = core.step(_forward, {"scale": 2})
    assert env.sent == [{0: 0, 1: 2, 2: 4}]
    assert sorted(timesteps) == [0, 1, 2] and timesteps[2].obs[0] == 14
    assert core.sent_out[1] == {"action": 2} and core.sent_obs[2][0] == 2


def test_skipped_envs_get_no_action_and_nothing_ready_returns_none():
    env = _Manager()
    core = EnvStepCore(env)
    core.step(_forward, {}, skip={1})
    assert env.sent == [{0: 0, 2: 2}]
    assert core.step(_forward, {}, skip={0, 1, 2}) is None  # nothing ready, nothing in flight: the caller decides


def test_deepcopy_and_before_act():
    env = _Manager(1)
    core = EnvStepCore(env, deepcopy_obs=True)
    seen = []
    core.step(_forward, {}, before_act=seen.append)
    assert len(seen) == 1 and seen[0][0] is not env.ready_obs[0]  # the policy saw a copy
    assert core.sent_obs[0] is not env.ready_obs[0]


def test_the_envs_and_the_policys_time_are_measured_apart():
    """The envs' time is wall time (a remote simulator's wait counts); the policy's is the CPU its forward used, so
    a forward that waited for a core (a busy machine) or slept is not counted as work every eval shard repeats."""
    import time

    class _Slow(_Manager):
        def step(self, actions):
            time.sleep(0.03)
            return super().step(actions)

    def slow_forward(obs):
        end = time.thread_time() + 0.01
        while time.thread_time() < end:  # 10 ms of CPU
            pass
        time.sleep(0.05)  # and 50 ms of waiting, which is not the policy's work
        return _forward(obs)

    core = EnvStepCore(_Slow())
    for _ in range(2):
        core.step(slow_forward, {})
    assert core.env_time >= 0.06
    assert 0.02 <= core.policy_time < 0.06  # the 20 ms of CPU, not the 100 ms of sleep
    assert core.policy_time < core.env_time  # each clock holds its own part, not the whole step
