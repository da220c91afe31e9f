"""Evaluators: VectorEvalMonitor quotas, should_eval cadence, fixed episodes, best checkpoint, stop flag, console line,
state for resume, errors, MetricSerialEvaluator, factory."""
from __future__ import annotations

import os
from collections import namedtuple

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from ding.envs.env.base_env import BaseEnv, BaseEnvTimestep
from ding.envs.env_manager.base_env_manager import BaseEnvManager
from ding.utils import ConfigError, EnvError, RegistryError
from ding.worker.collector import (
    IMetric,
    InteractionSerialEvaluator,
    MetricSerialEvaluator,
    VectorEvalMonitor,
    create_serial_evaluator,
    get_serial_evaluator_cls,
)

EvalMode = namedtuple("EvalMode", ["forward", "reset", "get_attribute", "set_attribute", "state_dict",
                                   "load_state_dict"])


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


class LenEnv(BaseEnv):
    """Episodes of ``length`` steps, return = length * scale; counts its episodes."""

    def __init__(self, length: int, scale: float = 1.0, report_return: bool = True) -> None:
        self._length, self._scale, self._report = length, scale, report_return
        self._t = 0
        self.episodes = 0

    def reset(self):
        self._t = 0
        return np.zeros(2, dtype=np.float32)

    def step(self, action):
        self._t += 1
        done = self._t >= self._length
        info = {}
        if done:
            self.episodes += 1
            if self._report:
                info = {"eval_episode_return": np.array([self._length * self._scale], dtype=np.float32),
                        "episode_info": {"final_t": self._t}}
        obs = np.array([self._t, 0], dtype=np.float32)
        return BaseEnvTimestep(obs, np.full(1, self._scale, dtype=np.float32), done, info)

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


class FakeEvalPolicy:
    def __init__(self):
        self.resets = []
        self.seen_ids = []

    def forward(self, data, **kwargs):
        self.seen_ids.append(sorted(data))
        return {i: {"action": np.int64(0)} for i in data}

    def mode(self):
        return EvalMode(self.forward, lambda data_id=None: self.resets.append(data_id), None, None, dict, None)


def make_env(lengths, scale=1.0, **kw):
    return BaseEnvManager([lambda n=n: LenEnv(n, scale, **kw) for n in lengths], EasyDict())


@pytest.fixture
def tmp(in_tmp_dir):
    return in_tmp_dir


def test_monitor_quotas_and_results():
    m = VectorEvalMonitor(3, 5)
    assert m.quota == [2, 2, 1]
    assert VectorEvalMonitor(4, 12).quota == [3, 3, 3, 3]
    assert VectorEvalMonitor(5, 2).quota == [1, 1, 0, 0, 0]
    for env_id, r in [(2, 5.0), (2, 99.0), (0, 1.0), (1, 3.0), (0, 2.0)]:
        m.update_reward(env_id, r)
        m.update_info(env_id, {"len": r})
    assert not m.is_finished() and m.env_finished(2) and m.env_finished(0) and not m.env_finished(1)
    m.update_reward(1, np.array([4.0]))
    assert m.is_finished()
    assert m.get_episode_return() == [1.0, 2.0, 3.0, 4.0, 5.0]  # 99 was past env 2's quota
    assert m.get_current_episode() == 5 and m.get_latest_reward(0) == 2.0
    info = m.get_episode_info()
    assert info["len"] == [1.0, 2.0, 3.0, 5.0] and info["len_mean"] == pytest.approx(11 / 4)
    with pytest.raises(ValueError, match="env_num and n_episode must be >= 1"):
        VectorEvalMonitor(0, 3)


def test_monitor_video():
    m = VectorEvalMonitor(2, 2)
    assert m.get_video() is None
    for t in range(3):
        m.update_video({0: np.full((4, 5, 3), t, np.uint8), 1: np.zeros((4, 5, 3), np.uint8)})
        if t == 1:
            m.update_reward(1, 1.0)  # env 1's first episode ended after 2 frames
    video = m.get_video()
    assert video.shape == (2, 3, 3, 4, 5) and video.dtype == np.uint8  # N, T, C, H, W
    assert video[0, 2, 0, 0, 0] == 2


def test_eval_uses_fixed_quotas_so_short_episodes_do_not_dominate(tmp):
    env = make_env([2, 10, 50])
    pol = FakeEvalPolicy()
    cfg = EasyDict(n_episode=5, stop_value=1000)
    with InteractionSerialEvaluator(cfg, env, pol.mode(), exp_name="exp") as ev:
        stop, info = ev.eval(train_iter=0, envstep=0)
    assert stop is False
    assert info["eval_episode_return"] == [2.0, 2.0, 10.0, 10.0, 50.0]
    assert info["episode_length"] == [2, 2, 10, 10, 50]
    assert info["eval_episode_return_mean"] == pytest.approx(74 / 5)
    assert info["final_t"] == [2, 2, 10, 10, 50] and info["final_t_mean"] == pytest.approx(74 / 5)
    assert info["envstep_count"] == 2 + 2 + 10 + 10 + 50  # finished envs are not stepped any more
    assert len(pol.seen_ids) == 50
    assert all(0 not in ids for ids in pol.seen_ids[4:]) and all(1 not in ids for ids in pol.seen_ids[20:])
    assert all(ids == [0, 1, 2] for ids in pol.seen_ids[:4])


def test_should_eval_cadence(tmp):
    with InteractionSerialEvaluator(EasyDict(eval_freq=100), make_env([3]), FakeEvalPolicy().mode(),
                                    exp_name="exp") as ev:
        assert [ev.should_eval(i) for i in (0, 0, 50, 99, 100, 100, 150, 199, 200, 450)] == \
            [True, False, False, False, True, False, False, False, True, True]
    with InteractionSerialEvaluator(EasyDict(eval_freq=100), make_env([3]), FakeEvalPolicy().mode(),
                                    exp_name="exp") as ev:
        assert ev.should_eval(30) is False and ev.should_eval(99) is True  # DI-engine: counted from -1


def test_best_checkpoint_and_stop_flag(tmp):
    saved = []
    pol = FakeEvalPolicy()
    env = BaseEnvManager([lambda: LenEnv(4, 1.0), lambda: LenEnv(4, 1.0)], EasyDict())
    with InteractionSerialEvaluator(EasyDict(n_episode=2, stop_value=8), env, pol.mode(), exp_name="exp") as ev:
        assert ev.best_return == float("-inf")
        stop, info = ev.eval(saved.append, train_iter=10, envstep=100)
        assert saved == ["ckpt_best.pth.tar"] and not stop and ev.best_return == 4.0
        stop, _ = ev.eval(saved.append, train_iter=20, envstep=200)
        assert saved == ["ckpt_best.pth.tar"]  # same mean: not a new best
        for e in env._envs:
            e._scale = 2.0
        stop, info = ev.eval(saved.append, train_iter=30, envstep=300)
        assert stop is True and info["stop_flag"] and info["eval_episode_return_mean"] == 8.0
        assert saved == ["ckpt_best.pth.tar"] * 2 and info["best_return"] == 8.0
        assert ev._max_episode_return == 8.0
        ev._max_episode_return = 100.0
        assert ev.best_return == 100.0


def test_same_episodes_every_evaluation_with_fixed_seed(tmp):
    import torch

    from ding.envs.env.ding_env_wrapper import DingEnvWrapper
    from ding.policy import DQNPolicy

    torch.manual_seed(0)
    policy = DQNPolicy(EasyDict(type="dqn", model=dict(obs_shape=4, action_shape=2)), enable_field=["eval"])
    env = BaseEnvManager([lambda: DingEnvWrapper(gym.make("CartPole-v1")) for _ in range(3)], EasyDict())
    env.seed(5, dynamic_seed=False)
    with InteractionSerialEvaluator(EasyDict(n_episode=4), env, policy.eval_mode, exp_name="exp") as ev:
        _, a = ev.eval()
        _, b = ev.eval()
    assert a["eval_episode_return"] == b["eval_episode_return"] and len(a["eval_episode_return"]) == 4


def test_console_line_and_tensorboard(tmp, capsys):
    class Tb:
        def __init__(self):
            self.tags = []

        def add_scalar(self, tag, v, step):
            self.tags.append((tag, step))

        def flush(self):
            pass

    tb = Tb()
    with InteractionSerialEvaluator(EasyDict(n_episode=2, stop_value=3), make_env([3, 3]), FakeEvalPolicy().mode(),
                                    tb_logger=tb, exp_name="exp") as ev:
        ev.eval(train_iter=1200, envstep=15360)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert out[0].startswith("[eval] iter 1,200 | env steps 15,360 | return 3 ± 0 (best 3) | ")
    assert out[0].endswith("steps/s | reached stop value 3")
    assert ("evaluator_step/episode_return_mean", 15360) in tb.tags
    assert ("evaluator_iter/episode_return_mean", 1200) in tb.tags


def test_console_line_without_iteration_has_no_empty_field(tmp, capsys):
    """``ding -m eval`` evaluates outside training: the line starts with the return, not an empty field."""
    with InteractionSerialEvaluator(EasyDict(n_episode=2, stop_value=3), make_env([3, 3]), FakeEvalPolicy().mode(),
                                    exp_name="exp") as ev:
        ev.eval()
        ev.eval(envstep=64)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("[eval] return 3 ± 0 (best 3) | ") and " |  | " not in lines[0]
    assert lines[1].startswith("[eval] env steps 64 | return 3 ± 0")


def test_state_dict_round_trip(tmp):
    with InteractionSerialEvaluator(EasyDict(eval_freq=10), make_env([2]), FakeEvalPolicy().mode(),
                                    exp_name="exp") as ev:
        ev.should_eval(0)
        ev.eval()
        state = ev.state_dict()
    with InteractionSerialEvaluator(EasyDict(eval_freq=10), make_env([2]), FakeEvalPolicy().mode(),
                                    exp_name="exp") as ev2:
        ev2.load_state_dict(state)
        assert ev2.best_return == 2.0 and ev2.should_eval(0) is False and ev2.should_eval(10) is True


def test_eval_errors(tmp):
    with InteractionSerialEvaluator(EasyDict(n_episode=None), make_env([2]), FakeEvalPolicy().mode(),
                                    exp_name="exp") as ev:
        with pytest.raises(ConfigError, match=r"n_episode must be >= 1, got None \(set env.n_evaluator_episode"):
            ev.eval()
    with InteractionSerialEvaluator(EasyDict(n_episode=1), make_env([2], report_return=False),
                                    FakeEvalPolicy().mode(), exp_name="exp") as ev:
        msg = r"env 0: the last timestep of an episode has no info\['eval_episode_return'\]"
        with pytest.raises(EnvError, match=msg):
            ev.eval()
    env = BaseEnvManager([lambda: LenEnv(2)], EasyDict(episode_num=1))
    with InteractionSerialEvaluator(EasyDict(n_episode=3), env, FakeEvalPolicy().mode(), exp_name="exp") as ev:
        with pytest.raises(EnvError, match="only 1 of 3 episodes are finished"):
            ev.eval()
    with pytest.raises(ConfigError, match="render.mode: 'iters' is not 'train_iter' or 'envstep'"):
        InteractionSerialEvaluator(EasyDict(render=dict(mode="iters")), None, None, exp_name="exp")
    ev = InteractionSerialEvaluator(EasyDict(), None, None, exp_name="exp")
    with pytest.raises(RuntimeError, match="set the env and the policy first"):
        ev.eval()
    ev.close()
    ev.close()


def test_render_without_frames_warns_once(tmp):
    with InteractionSerialEvaluator(EasyDict(n_episode=1, render=dict(render_freq=1)), make_env([2]),
                                    FakeEvalPolicy().mode(), exp_name="exp") as ev:
        ev.eval(train_iter=5)
        ev.eval(force_render=True)
    log = read_text(os.path.join("exp", "log", "evaluator", "evaluator_logger.txt"))
    assert log.count("has no ready_imgs; no videos are recorded") == 1


def test_closes_its_env(tmp):
    env = make_env([2])
    InteractionSerialEvaluator(EasyDict(), env, FakeEvalPolicy().mode(), exp_name="exp").close()
    assert env.closed


class Accuracy(IMetric):
    def eval(self, inputs, label):
        return float(np.mean(np.asarray(inputs) == np.asarray(label)))

    def reduce_mean(self, inputs):
        return float(np.mean(inputs))

    def gt(self, metric1, metric2):
        return metric2 is None or metric1 >= metric2


def test_metric_evaluator(tmp, capsys):
    data = [(np.array([0, 1, 2]), np.array([0, 1, 0])), (np.array([3, 3]), np.array([3, 3]))]
    saved = []
    pol = EvalMode(lambda x: x, lambda data_id=None: None, None, None, dict, None)
    with MetricSerialEvaluator(EasyDict(stop_value=0.9), (data, Accuracy()), pol, exp_name="exp") as ev:
        assert ev.should_eval(0)
        stop, value = ev.eval(saved.append, train_iter=3)
        assert value == pytest.approx((2 / 3 + 1) / 2) and not stop and saved == ["ckpt_best.pth.tar"]
        stop, value = ev.eval(saved.append, train_iter=4)
        assert saved == ["ckpt_best.pth.tar"] * 2  # gt is >=: an equal metric counts as a new best
    with MetricSerialEvaluator(EasyDict(stop_value=0.5), (data, Accuracy()), pol, exp_name="exp") as ev:
        capsys.readouterr()
        assert ev.eval()[0] is True
        assert capsys.readouterr().out.startswith("[eval] metric 0.8")
    with pytest.raises(TypeError, match=r"env must be a \(dataloader, IMetric instance\) pair"):
        MetricSerialEvaluator(EasyDict(), (data, None), pol, exp_name="exp")


def test_factory(tmp):
    assert get_serial_evaluator_cls(EasyDict()) is InteractionSerialEvaluator
    assert get_serial_evaluator_cls(EasyDict(type="metric")) is MetricSerialEvaluator
    with create_serial_evaluator(EasyDict(type="interaction", n_episode=1), env=make_env([2]),
                                 policy=FakeEvalPolicy().mode(), exp_name="exp") as ev:
        assert ev.eval()[1]["eval_episode_return"] == [2.0]
    with pytest.raises(RegistryError, match="Did you mean 'interaction'"):
        get_serial_evaluator_cls(EasyDict(type="interactoin"))
