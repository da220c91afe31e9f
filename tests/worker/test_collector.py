"""Serial collectors: sample counts, env-step counts, traj_len chunks, n-step chunk boundaries, abnormal episodes,
episode callbacks, the episode collector, state for resume, and a real CartPole + DQN run."""
from __future__ import annotations

import os
from collections import namedtuple

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from ding.envs.env.base_env import BaseEnv, BaseEnvTimestep
from ding.envs.env_manager.base_env_manager import BaseEnvManager
from ding.rl_utils import get_nstep_return_data
from ding.utils import EPISODE_CALLBACK_REGISTRY, ConfigError, EnvError, RegistryError
from ding.worker.collector import (
    EpisodeCallback,
    EpisodeSerialCollector,
    SampleSerialCollector,
    create_serial_collector,
    get_serial_collector_cls,
    to_tensor_transitions,
)

CollectMode = namedtuple("CollectMode", ["forward", "process_transition", "get_train_sample", "reset",
                                         "get_attribute", "set_attribute", "state_dict", "load_state_dict"])


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


class CountEnv(BaseEnv):
    """obs = [tag, t]; reward 1 per step; episodes of ``length`` steps; ``fail_at=(episode, step)`` raises once."""

    def __init__(self, tag: int = 0, length: int = 5, fail_at: tuple[int, int] | None = None) -> None:
        self._tag, self._length, self._fail_at = tag, length, fail_at
        self._t = 0
        self._episode = -1

    def reset(self):
        self._t = 0
        self._episode += 1
        return self._obs()

    def _obs(self):
        return np.array([self._tag, self._t], dtype=np.float32)

    def step(self, action):
        if self._fail_at == (self._episode, self._t):
            self._fail_at = None
            raise RuntimeError("simulated crash")
        self._t += 1
        done = self._t >= self._length
        info = {"eval_episode_return": float(self._t)} if done else {}
        return BaseEnvTimestep(self._obs(), np.ones(1, dtype=np.float32), done, info)

    def seed(self, seed, dynamic_seed=True):
        pass

    def close(self):
        pass

    @property
    def observation_space(self):
        return gym.spaces.Box(-np.inf, np.inf, (2, ), np.float32)

    @property
    def action_space(self):
        return gym.spaces.Discrete(2)


class CountingManager(BaseEnvManager):
    """Counts every timestep returned (the ground truth for ``collector.envstep``)."""

    steps = 0

    def step(self, actions):
        out = super().step(actions)
        self.steps += len(out)
        return out


def make_env(lengths=(5, 5, 5, 5), fail_at=None, **cfg) -> CountingManager:
    fns = [lambda i=i, n=n: CountEnv(i, n, fail_at if i == 0 else None) for i, n in enumerate(lengths)]
    return CountingManager(fns, EasyDict(retry_waiting_time=0.0, **cfg))


class FakeCollectPolicy:
    """Action 0 everywhere; transitions ``{obs, next_obs, action, reward, done}``; optional n-step samples."""

    def __init__(self, n_sample=None, n_episode=None, unroll_len=1, nstep=1, on_policy=False):
        collect = dict(unroll_len=unroll_len)
        if n_sample is not None:
            collect["n_sample"] = n_sample
        if n_episode is not None:
            collect["n_episode"] = n_episode
        self.cfg = EasyDict(collect=collect, on_policy=on_policy)
        self.nstep = nstep
        self.resets = []
        self.kwargs = []
        self.chunks = []  # length of every chunk given to get_train_sample

    def forward(self, data, **kwargs):
        self.kwargs.append(kwargs)
        return {i: {"action": np.int64(0)} for i in data}

    @staticmethod
    def process_transition(obs, out, ts):
        return {"obs": obs, "next_obs": ts.obs, "action": out["action"], "reward": ts.reward,
                "done": bool(ts.done)}

    def get_train_sample(self, transitions):
        self.chunks.append(len(transitions))
        return transitions if self.nstep == 1 else get_nstep_return_data(transitions, self.nstep, 0.9)

    def get_attribute(self, name):
        attrs = {"cfg": self.cfg, "nstep": self.nstep, "on_policy": self.cfg.on_policy}
        if name not in attrs:
            raise AttributeError(name)
        return attrs[name]

    def mode(self):
        return CollectMode(self.forward, self.process_transition, self.get_train_sample,
                           lambda data_id=None: self.resets.append(data_id), self.get_attribute, None, dict, None)


def obs_key(o):
    return int(o[0]), int(o[1])


@pytest.fixture
def tmp(in_tmp_dir):
    return in_tmp_dir


def test_collect_returns_n_sample_with_keys_and_counts_envsteps(tmp):
    env = make_env()
    pol = FakeCollectPolicy(n_sample=12)
    with SampleSerialCollector(EasyDict(), env, pol.mode(), exp_name="exp") as col:
        assert col.traj_len == 3  # ceil(12 / 4)
        data = col.collect(train_iter=7, policy_kwargs={"eps": 0.5})
        assert len(data) == 12
        assert set(data[0]) == {"obs", "next_obs", "action", "reward", "done", "collect_iter"}
        assert all(d["collect_iter"] == 7 for d in data)
        assert pol.kwargs[-1] == {"eps": 0.5}
        assert col.envstep == env.steps == 12  # every env did exactly one chunk of 3 steps
        data = col.collect(n_sample=20, train_iter=8)
        assert len(data) == 20 and col.envstep == env.steps
        assert env.closed is False
    assert env.closed is True


def test_drop_extra_and_traj_len_from_unroll_len(tmp):
    env = make_env(lengths=(50, ) * 4)
    with SampleSerialCollector(EasyDict(), env, FakeCollectPolicy(n_sample=10).mode(), exp_name="exp") as col:
        assert col.traj_len == 3
        assert len(col.collect()) == 10  # 12 made (4 chunks of 3), 10 returned
        assert len(col.collect(drop_extra=False)) == 12
    env2 = make_env(lengths=(50, ) * 4)
    pol = FakeCollectPolicy(n_sample=4, unroll_len=6)
    with SampleSerialCollector(EasyDict(), env2, pol.mode(), exp_name="exp") as col:
        assert col.traj_len == 6  # max(unroll_len, ceil(4 / 4))


def test_trajectories_are_consecutive_per_env_and_episode_end_flushes(tmp):
    env = make_env(lengths=(4, 7, 4, 7))
    with SampleSerialCollector(EasyDict(), env, FakeCollectPolicy(n_sample=8).mode(), exp_name="exp") as col:
        data = []
        for _ in range(6):
            data += col.collect(drop_extra=False)
        per_env = {}
        for d in data:
            per_env.setdefault(int(d["obs"][0]), []).append(d)
        for env_id, items in per_env.items():
            ts = [int(d["obs"][1]) for d in items]
            length = 4 if env_id in (0, 2) else 7
            assert ts == [i % length for i in range(len(ts))]  # every step exactly once, in order
            assert all(d["done"] == (int(d["next_obs"][1]) == length) for d in items)


def test_nstep_chunks_keep_the_tail_so_windows_are_exact(tmp):
    nstep = 3
    env = make_env(lengths=(9, 11, 9, 11))
    pol = FakeCollectPolicy(n_sample=8, nstep=nstep)
    with SampleSerialCollector(EasyDict(), env, pol.mode(), exp_name="exp") as col:
        data = []
        for _ in range(10):
            data += col.collect(drop_extra=False)
    for d in data:
        tag, t = obs_key(d["obs"])
        length = 9 if tag in (0, 2) else 11
        end = min(t + nstep, length)
        assert int(d["next_obs"][1]) == end  # the window's last next_obs, across chunk boundaries
        assert d["done"] == (end == length)
        np.testing.assert_allclose(d["reward"], [1.0 if t + k < end else 0.0 for k in range(nstep)])
    per_env = {}
    for tag, t in (obs_key(d["obs"]) for d in data):
        per_env.setdefault(tag, []).append(t)
    for tag, ts in per_env.items():
        length = 9 if tag in (0, 2) else 11
        assert ts == [i % length for i in range(len(ts))]  # no step lost or duplicated at chunk boundaries


def test_n_sample_missing_or_conflicting_is_a_config_error(tmp):
    with SampleSerialCollector(EasyDict(), make_env(), FakeCollectPolicy().mode(), exp_name="exp") as col:
        assert col.traj_len == float("inf")
        with pytest.raises(ConfigError, match=r"n_sample is not set; pass collect\(n_sample=...\)"):
            col.collect()
        assert len(col.collect(n_sample=5)) == 5  # whole episodes only: 4 envs x 5 steps
    with pytest.raises(ConfigError, match=r"both n_sample \(8\) and n_episode \(2\) are set"):
        SampleSerialCollector(EasyDict(), make_env(), FakeCollectPolicy(n_sample=8, n_episode=2).mode(),
                              exp_name="exp")


def test_abnormal_episode_is_dropped(tmp):
    # env 0 crashes at step 2 of its second episode; the manager restarts it and reports an abnormal timestep
    env = make_env(lengths=(4, 4), fail_at=(1, 2), max_retry=2)
    pol = FakeCollectPolicy(n_sample=8)
    with SampleSerialCollector(EasyDict(), env, pol.mode(), exp_name="exp") as col:
        data = col.collect(n_sample=24, drop_extra=False)
        assert col.envstep == env.steps - 1  # the failed step is reported but is not an env step
        env0 = [int(d["obs"][1]) for d in data if d["obs"][0] == 0]
        # episode 0 complete (4 steps), episode 1 dropped after 2 steps, then full episodes again
        assert env0[:4] == [0, 1, 2, 3] and env0[4:8] == [0, 1, 2, 3]
        assert [0] in pol.resets  # the policy's state for env 0 was reset
        log = read_text(os.path.join("exp", "log", "collector", "collector_logger.txt"))
        assert "env 0: abnormal episode dropped (2 cached transitions)" in log


class Recorder(EpisodeCallback):
    def __init__(self, tag="rec", events=None):
        self.tag = tag
        self.events = [] if events is None else events
        self.collector = None

    def setup(self, collector):
        self.collector = collector

    def on_episode_start(self, env_id):
        self.events.append((self.tag, "start", env_id))

    def on_episode_step(self, env_id, timestep, transition):
        assert transition["next_obs"] is timestep.obs
        self.events.append((self.tag, "step", env_id, int(timestep.obs[1])))

    def on_episode_end(self, env_id, episode_info):
        self.events.append((self.tag, "end", env_id, episode_info["eval_episode_return"], episode_info["step"]))
        return {"double_return": 2 * episode_info["eval_episode_return"]}

    def on_sample_end(self, samples):
        self.events.append((self.tag, "sample_end", len(samples)))
        return samples[:3] if self.tag == "trim" else None


class FakeTb:
    def __init__(self):
        self.scalars = {}

    def add_scalar(self, tag, value, step):
        self.scalars.setdefault(tag, []).append((step, value))

    def flush(self):
        pass

    def close(self):
        pass


def test_callbacks_fire_in_order_with_args_and_metrics_are_logged(tmp):
    events = []
    env = make_env(lengths=(3, 3))
    tb = FakeTb()
    with SampleSerialCollector(EasyDict(collect_print_freq=0), env, FakeCollectPolicy(n_sample=6).mode(),
                               tb_logger=tb, exp_name="exp") as col:
        first, second = Recorder("a", events), Recorder("trim", events)
        col.register_callback(first)
        col.register_callback(second)
        assert first.collector is col
        data = col.collect(train_iter=1)
    assert len(data) == 3  # the second callback's on_sample_end replaced the data
    env0 = [e for e in events if len(e) > 2 and e[1] != "sample_end" and e[2] == 0]
    assert env0 == [
        ("a", "start", 0), ("trim", "start", 0),
        ("a", "step", 0, 1), ("trim", "step", 0, 1), ("a", "step", 0, 2), ("trim", "step", 0, 2),
        ("a", "step", 0, 3), ("trim", "step", 0, 3),
        ("a", "end", 0, 3.0, 3), ("trim", "end", 0, 3.0, 3),
    ]
    assert events[-2:] == [("a", "sample_end", 6), ("trim", "sample_end", 6)]
    assert tb.scalars["collector_step/custom/double_return"] == [(6, 6.0)]
    assert tb.scalars["collector_step/episode_return_mean"] == [(6, 3.0)]


@EPISODE_CALLBACK_REGISTRY.register("test_collector_counting_cb")
class CountingCallback(EpisodeCallback):
    def __init__(self, scale=1):
        self.scale = scale
        self.ends = 0

    def on_episode_end(self, env_id, episode_info):
        self.ends += self.scale


def test_callbacks_from_config_and_errors(tmp):
    cfg = EasyDict(callbacks=[dict(type="test_collector_counting_cb", scale=10)])
    with SampleSerialCollector(cfg, make_env(lengths=(2, 2)), FakeCollectPolicy(n_sample=4).mode(),
                               exp_name="exp") as col:
        col.collect()
        (cb, ) = col.callbacks
        assert isinstance(cb, CountingCallback) and cb.ends == 20
        with pytest.raises(TypeError, match="must be an EpisodeCallback instance"):
            col.register_callback(object())
    bad = EasyDict(callbacks=[dict(type="test_collector_countin_cb")])
    msg = r"collector.callbacks\[0\].type: unknown episode_callback type .*Did you mean 'test_collector_counting_cb'"
    with pytest.raises(RegistryError, match=msg):
        SampleSerialCollector(bad, make_env(), FakeCollectPolicy(n_sample=4).mode(), exp_name="exp")
    with pytest.raises(ConfigError, match=r"collector.callbacks\[0\]: expected dict\(type="):
        SampleSerialCollector(EasyDict(callbacks=["x"]), make_env(), None, exp_name="exp")


def test_periodic_log_and_random_collect_not_recorded(tmp):
    tb = FakeTb()
    with SampleSerialCollector(EasyDict(collect_print_freq=10), make_env(lengths=(2, 2)),
                               FakeCollectPolicy(n_sample=4).mode(), tb_logger=tb, exp_name="exp") as col:
        col.collect(train_iter=0, random_collect=True, record_random_collect=False)
        col.collect(train_iter=5)
        assert tb.scalars == {}  # less than collect_print_freq iterations since the last log
        col.collect(train_iter=10)
        assert tb.scalars["collector_iter/episode_count"] == [(10, 4)]  # the random-collect episodes were not kept
        assert {"collector_step/envstep_per_sec", "collector_step/sample_per_sec",
                "collector_step/episode_length_mean"} <= set(tb.scalars)
    log = read_text(os.path.join("exp", "log", "collector", "collector_logger.txt"))
    assert "[collector] iter 10 | env steps 12 | 4 episodes, return 2" in log


def test_on_policy_collect_is_a_rollout_of_traj_len_steps_per_env(tmp):
    """Each env steps exactly ceil(n_sample / env_num) times; segments are cut at episode ends and at the end of
    the call, nothing stays cached (the next call's data comes from the new policy) and no step is wasted."""
    env = make_env(lengths=(2, 5))
    policy = FakeCollectPolicy(n_sample=6, on_policy=True)
    with SampleSerialCollector(EasyDict(), env, policy.mode(), exp_name="exp") as col:
        data = col.collect()
        assert col.state_dict()["caches"] == [[], []]
        assert len(data) == 6 and col.envstep == 6
        assert sorted(policy.chunks) == [1, 2, 3]  # env 0: an episode of 2, then 1 step; env 1: 3
        data = col.collect(n_sample=3)  # ceil(3 / 2) = 2 steps per env
        assert len(data) == 4 and col.envstep == 10


def test_level_seeds_and_reset_and_envstep_setter(tmp):
    with SampleSerialCollector(EasyDict(), make_env(lengths=(3, 3)), FakeCollectPolicy(n_sample=2).mode(),
                               exp_name="exp") as col:
        data = col.collect(level_seeds={0: 11, 1: 22})
        assert sorted(d["seed"] for d in data) == [11, 22]
        col.envstep = 1000
        assert col.envstep == 1000
        col.reset()
        assert col.envstep == 0


def test_exhausted_env_manager_is_an_error_not_a_hang(tmp):
    env = make_env(lengths=(2, 2), episode_num=1)
    with SampleSerialCollector(EasyDict(), env, FakeCollectPolicy(n_sample=2).mode(), exp_name="exp") as col:
        with pytest.raises(EnvError, match="every env finished its episode_num episodes"):
            col.collect(n_sample=100)


def test_state_dict_resumes_the_same_data(tmp):
    pol = FakeCollectPolicy(n_sample=6, nstep=2)
    with SampleSerialCollector(EasyDict(), make_env(lengths=(5, 7)), pol.mode(), exp_name="exp") as col:
        col.collect()
        state = col.state_dict()
        expected = [obs_key(d["obs"]) + obs_key(d["next_obs"]) for d in col.collect() + col.collect()]
        expected_step = col.envstep
    with SampleSerialCollector(EasyDict(), make_env(lengths=(5, 7)), pol.mode(), exp_name="exp",
                               instance_name="c2") as col2:
        col2.load_state_dict(state)
        got = [obs_key(d["obs"]) + obs_key(d["next_obs"]) for d in col2.collect() + col2.collect()]
        assert got == expected and col2.envstep == expected_step


def test_closed_collector_and_missing_parts(tmp):
    col = SampleSerialCollector(EasyDict(), make_env(), None, exp_name="exp")
    with pytest.raises(RuntimeError, match="set the env manager and the policy first"):
        col.collect(n_sample=1)
    col.close()
    col.close()
    with pytest.raises(RuntimeError, match="the collector is closed"):
        col.collect(n_sample=1)
    with pytest.raises(RuntimeError, match="set the env manager first"):
        SampleSerialCollector(EasyDict(), None, FakeCollectPolicy().mode(), exp_name="exp")


def test_episode_collector_counts_and_train_samples(tmp):
    env = make_env(lengths=(3, 5, 3))
    pol = FakeCollectPolicy(n_episode=4)
    with EpisodeSerialCollector(EasyDict(), env, pol.mode(), exp_name="exp") as col:
        episodes = col.collect(train_iter=2)
        assert 4 <= len(episodes) <= 4 + 3 - 1
        for ep in episodes:
            tag = int(ep[0]["obs"][0])
            assert [int(t["obs"][1]) for t in ep] == list(range(5 if tag == 1 else 3))
            assert ep[-1]["done"] and not any(t["done"] for t in ep[:-1])
        assert col.envstep == env.steps
        assert len(col.collect(n_episode=1)) >= 1
    pol3 = FakeCollectPolicy(n_episode=2, nstep=3)
    with EpisodeSerialCollector(EasyDict(get_train_sample=True), make_env(lengths=(4, 4)), pol3.mode(),
                                exp_name="exp") as col:
        samples = col.collect()
        assert len(samples) == 8 and all(s["reward"].shape == (3, ) for s in samples)
    with EpisodeSerialCollector(EasyDict(), make_env(), FakeCollectPolicy().mode(), exp_name="exp") as col:
        with pytest.raises(ConfigError, match=r"n_episode is not set; pass collect\(n_episode=...\)"):
            col.collect()


def test_factory_and_to_tensor_transitions(tmp):
    assert get_serial_collector_cls(EasyDict(type="episode")) is EpisodeSerialCollector
    col = create_serial_collector(EasyDict(type="sample"), env=make_env(),
                                  policy=FakeCollectPolicy(n_sample=8).mode(), exp_name="exp")
    assert isinstance(col, SampleSerialCollector)
    data = col.collect()
    col.close()
    with pytest.raises(RegistryError, match="Did you mean 'sample'"):
        get_serial_collector_cls(EasyDict(type="sampel"))
    chunk = [d for d in data if d["obs"][0] == 0]
    tt = to_tensor_transitions(chunk)
    assert len(tt) == 2
    assert tt[0]["obs"].__class__.__name__ == "Tensor" and tt[0]["next_obs"] is tt[1]["obs"]
    assert tt[1]["next_obs"].__class__.__name__ == "Tensor" and tt[1]["done"] is False


def test_cartpole_dqn_collect(tmp):
    import torch

    from ding.envs.env.ding_env_wrapper import DingEnvWrapper
    from ding.policy import DQNPolicy

    torch.manual_seed(0)
    cfg = EasyDict(type="dqn", nstep=3, model=dict(obs_shape=4, action_shape=2), collect=dict(n_sample=64))
    policy = DQNPolicy(cfg, enable_field=["collect"])
    env = BaseEnvManager([lambda: DingEnvWrapper(gym.make("CartPole-v1")) for _ in range(8)], EasyDict())
    env.seed(0)
    with SampleSerialCollector(EasyDict(collect_print_freq=0), env, policy.collect_mode, exp_name="exp") as col:
        assert col.traj_len == 8
        data = col.collect(train_iter=0, policy_kwargs={"eps": 0.5})
        assert len(data) == 64
        s = data[0]
        assert {"obs", "next_obs", "action", "reward", "done", "value_gamma", "collect_iter"} <= set(s)
        assert s["obs"].shape == (4, ) and s["obs"].dtype == np.float32 and s["reward"].shape == (3, )
        assert col.envstep >= 64 + 8 * 2  # the first chunk per env needs nstep - 1 extra steps
        assert len(col.collect(n_sample=512, train_iter=1, policy_kwargs={"eps": 0.5})) == 512
    log = read_text(os.path.join("exp", "log", "collector", "collector_logger.txt"))
    assert "[collector] iter 1 | env steps" in log and "steps/s" in log
