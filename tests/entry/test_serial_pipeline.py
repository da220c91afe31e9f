"""serial_pipeline end to end on CartPole DQN: convergence, determinism, output files, bad input."""
from __future__ import annotations

import os
import re
import time

import pytest
import torch

from ding.config import read_config
from ding.engine.training_view import read_eval_csv
from ding.entry import serial_pipeline
from ding.utils import CheckpointError, ConfigError, EnvError, RegistryError, TrainingError

from .conftest import read_result


@pytest.mark.convergence
def test_cartpole_dqn_reaches_stop_value(in_tmp_dir, cartpole_dqn):
    """The shipped config trains CartPole to 195 within the promised budget (fixed seed)."""
    policy = serial_pipeline(cartpole_dqn("conv", log_show_after_iter=100), seed=0, max_env_step=5000)
    result = read_result("conv")
    assert result["stop_flag"] is True
    assert result["eval_return"] >= 195
    assert result["env_step"] <= 5000
    assert result["train_iter"] > 0
    assert policy.eval_mode is not None
    # the output layout of SPEC section 6
    for rel in ("total_config.py", "formatted_total_config.py", "log/eval.csv", "log/serial",
                "log/learner/learner_logger.txt", "log/collector/collector_logger.txt",
                "log/evaluator/evaluator_logger.txt", "log/buffer/buffer_logger.txt",
                "ckpt/ckpt_best.pth.tar", f"ckpt/iteration_{result['train_iter']}.pth.tar"):
        assert os.path.exists(os.path.join("conv", rel)), rel
    rows = read_eval_csv("conv/log/eval.csv")
    assert rows[-1]["eval_return_mean"] == pytest.approx(result["eval_return"], rel=1e-5)
    groups = {tag.split("/")[0] for tag in _tensorboard_tags("conv/log/serial")}
    assert groups == _documented_tensorboard_groups()


def _documented_tensorboard_groups() -> set[str]:
    """The tag groups docs/serial.md's output layout lists for log/serial/ (``learner_iter/*, ...``)."""
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "serial.md")
    with open(doc, encoding="utf-8") as f:
        line = next(line for line in f if "log/serial/" in line and "TensorBoard:" in line)
    return set(re.findall(r"(\w+)/\*", line))


def _tensorboard_tags(log_dir: str) -> set[str]:
    """Scalar tags in a tensorboardX event file (TFRecord framing: length, crc, Event proto, crc)."""
    import glob
    import struct

    from tensorboardX.proto import event_pb2

    tags = set()
    for path in glob.glob(os.path.join(log_dir, "events.out.tfevents*")):
        with open(path, "rb") as f:
            data = f.read()
        i = 0
        while i < len(data):
            (n,) = struct.unpack("<Q", data[i:i + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[i + 12:i + 12 + n])
            tags.update(v.tag for v in event.summary.value)
            i += 12 + n + 4
    return tags


def test_same_seed_same_evaluations(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("a"), seed=3, max_train_iter=200)
    serial_pipeline(cartpole_dqn("b"), seed=3, max_train_iter=200)
    a, b = read_eval_csv("a/log/eval.csv"), read_eval_csv("b/log/eval.csv")
    assert len(a) >= 5
    assert [(r["train_iter"], r["env_step"], r["eval_return_mean"]) for r in a] == \
        [(r["train_iter"], r["env_step"], r["eval_return_mean"]) for r in b]


def test_different_seeds_differ(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("s0"), seed=0, max_train_iter=120)
    serial_pipeline(cartpole_dqn("s1"), seed=1, max_train_iter=120)
    a, b = read_eval_csv("s0/log/eval.csv"), read_eval_csv("s1/log/eval.csv")
    assert [r["eval_return_mean"] for r in a] != [r["eval_return_mean"] for r in b]


def test_limits_stop_the_run(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("lim"), seed=0, max_env_step=200)
    result = read_result("lim")
    assert result["stop_flag"] is False
    assert 200 <= result["env_step"] < 200 + 16


def test_existing_exp_dir_is_not_overwritten(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("same"), seed=0, max_train_iter=10)
    serial_pipeline(cartpole_dqn("same"), seed=0, max_train_iter=10)
    renewed = [d for d in os.listdir(".") if d.startswith("same_")]
    assert len(renewed) == 1 and os.path.exists(os.path.join(renewed[0], "result"))


def test_unknown_policy_type(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn()
    create.policy.type = "dqm"
    with pytest.raises(RegistryError, match="(?s)unknown policy type 'dqm'.*Did you mean 'dqn'"):
        serial_pipeline((main, create), seed=0)


def test_config_typo_names_key_and_suggestion(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn()
    main.policy.learn.update_per_colect = 3
    with pytest.raises(ConfigError, match=r"policy\.learn\.update_per_colect.*update_per_collect"):
        serial_pipeline((main, create), seed=0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("section,key,value", [
    ("collect", "n_sample", 0), ("learn", "update_per_collect", -5), ("learn", "batch_size", 0),
])
def test_zero_or_negative_loop_size_fails_before_anything_runs(in_tmp_dir, cartpole_dqn, section, key, value):
    """These used to loop forever without training; now the compile step names the key and writes nothing."""
    main, create = cartpole_dqn("loop")
    main.policy[section][key] = value
    with pytest.raises(ConfigError, match=rf"policy\.{section}\.{key}: must be >= 1, got {value}"):
        serial_pipeline((main, create), seed=0)
    assert not os.path.exists("loop")


@pytest.mark.timeout(30)
def test_a_hanging_reset_in_the_in_process_manager_ends_in_a_clear_error(in_tmp_dir, cartpole_dqn):
    from ._envs import RELEASE_HUNG_RESETS

    RELEASE_HUNG_RESETS.clear()
    main, create = cartpole_dqn("hang")
    create.env.type = "test_hanging_reset_cartpole"
    create.env.import_names = ["tests.entry._envs"]
    main.env.manager = dict(reset_timeout=1.0)
    start = time.monotonic()
    try:
        with pytest.raises(EnvError, match=r"(?s)env 0: reset failed 1 time.*env 0: reset did not finish within 1s; "
                                           r"the env was abandoned \(env\.manager\.reset_timeout=1"):
            serial_pipeline((main, create), seed=0)
    finally:
        RELEASE_HUNG_RESETS.set()  # the abandoned reset returns, and its helper thread closes the env
    assert time.monotonic() - start < 10


@pytest.mark.timeout(60)
def test_nan_loss_stops_the_run_and_keeps_the_last_finite_checkpoint(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn("nan", save_ckpt_after_iter=20)
    create.env.type = "test_nan_reward_cartpole"
    create.env.import_names = ["tests.entry._envs"]
    with pytest.raises(TrainingError, match=r"train iteration (\d+): non-finite loss total_loss=nan") as info:
        serial_pipeline((main, create), seed=0)
    failed_at = int(re.search(r"train iteration (\d+)", str(info.value)).group(1))
    saved = sorted(int(n.split("_")[1].split(".")[0]) for n in os.listdir("nan/ckpt") if n.startswith("iteration_"))
    assert saved and saved[-1] < failed_at
    assert f"the last checkpoint written is ./nan/ckpt/iteration_{saved[-1]}.pth.tar" in str(info.value)
    for name in os.listdir("nan/ckpt"):
        model = torch.load(f"nan/ckpt/{name}", weights_only=False)["model"]
        assert all(bool(torch.isfinite(t).all()) for t in model.values()), name


def test_dqn_on_pendulum_is_refused_at_set_up(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn("pendulum")
    main.policy.model.update(obs_shape=3, action_shape=1)
    create.env = dict(type="pendulum", import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"])
    with pytest.raises(ConfigError, match=r"DQNPolicy \('dqn'\) needs a Discrete action space, but env 'pendulum' "
                                          r"has Box\(-1\.0, 1\.0, \(1,\), float32\)"):
        serial_pipeline((main, create), seed=0)
    assert not os.path.exists("pendulum/ckpt")


@pytest.mark.parametrize("entry", ["serial", "eval"])
def test_model_shape_is_checked_against_the_env_by_every_entry(in_tmp_dir, cartpole_dqn, entry):
    from ding.entry import eval as eval_entry

    main, create = cartpole_dqn("shape")
    main.policy.model.obs_shape = 8
    with pytest.raises(ConfigError, match=r"policy\.model\.obs_shape: 8 does not match the observation space of env "
                                          r"'cartpole', Box\(.*\) \(expects 4\)"):
        if entry == "serial":
            serial_pipeline((main, create), seed=0)
        else:
            open("ckpt.pth.tar", "wb").close()
            eval_entry((main, create), seed=0, load_path="ckpt.pth.tar")


@pytest.mark.parametrize("limits,why", [
    (dict(max_env_step=-1), r"max_env_step \(--env-step\): must be >= 0, got -1"),
    (dict(max_train_iter=-100), r"max_train_iter \(--train-iter\): must be >= 0, got -100"),
    (dict(max_train_iter=1.5), r"max_train_iter \(--train-iter\): expected an int >= 0, got 1.5"),
])
def test_negative_limits_are_refused_before_anything_is_written(in_tmp_dir, cartpole_dqn, limits, why):
    with pytest.raises(ConfigError, match=why):
        serial_pipeline(cartpole_dqn("limits"), seed=0, **limits)
    assert not os.path.exists("limits")


@pytest.mark.timeout(30)
def test_a_batch_larger_than_the_buffer_is_refused(in_tmp_dir, cartpole_dqn):
    """The buffer could never hold a batch: the loop would collect forever without training."""
    main, create = cartpole_dqn("small")
    main.policy.other.replay_buffer.replay_buffer_size = 32
    with pytest.raises(ConfigError, match=r"policy\.learn\.batch_size: a batch of 64 needs 64 stored items, but "
                                          r"policy\.other\.replay_buffer\.replay_buffer_size is 32"):
        serial_pipeline((main, create), seed=0)


def test_priorities_with_a_buffer_that_has_none_are_refused(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn("prio")  # the 'deque' (naive) buffer samples uniformly
    main.policy.priority = True
    with pytest.raises(ConfigError, match=r"policy\.priority=True, but the 'deque' replay buffer does not sample by "
                                          r"priority; use create_config\.replay_buffer\.type='advanced'"):
        serial_pipeline((main, create), seed=0)


def test_n_sample_and_n_episode_both_set(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn()
    main.policy.collect.n_episode = 2
    with pytest.raises(ConfigError, match="(?s)n_sample.*n_episode"):
        serial_pipeline((main, create), seed=0)


def test_env_with_wrong_observation_shape(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn()
    create.env.type = "test_wrong_obs_shape_cartpole"
    create.env.import_names = ["tests.entry._envs"]
    with pytest.raises(EnvError, match=r"(?s)env 0.*shape \(5,\).*expects \(4,\)"):
        serial_pipeline((main, create), seed=0, max_train_iter=5)


def test_model_given_by_the_caller(in_tmp_dir, cartpole_dqn):
    from ding.model import DQN

    model = DQN(obs_shape=4, action_shape=2, encoder_hidden_size_list=[32, 32], dueling=False)
    policy = serial_pipeline(cartpole_dqn("own_model"), seed=0, model=model, max_train_iter=20)
    assert policy.learn_mode.get_attribute("model") is model or any(
        p is q for p, q in zip(model.parameters(), policy.eval_mode.state_dict()["model"].values()))


def test_resume_with_other_model_shape_is_a_clear_error(in_tmp_dir, cartpole_dqn):
    serial_pipeline(cartpole_dqn("shape"), seed=0, max_train_iter=20)
    main, create = cartpole_dqn("shape")
    main.policy.model.encoder_hidden_size_list = [64, 64, 32]
    with pytest.raises(CheckpointError, match="(?s)iteration_20.pth.tar.*(shape|size)"):
        serial_pipeline((main, create), seed=0, max_train_iter=40, resume=True)


def test_resume_without_checkpoint(in_tmp_dir, cartpole_dqn):
    with pytest.raises(CheckpointError, match="no checkpoint to resume from.*without --resume"):
        serial_pipeline(cartpole_dqn("never_ran"), seed=0, resume=True)
    assert not os.path.exists("never_ran")


def test_workers_closed_after_an_error(in_tmp_dir, cartpole_dqn, monkeypatch):
    """An exception inside the loop still closes every worker and env manager."""
    from ding.worker import SampleSerialCollector

    closed = []
    real_close = SampleSerialCollector.close

    def boom(self, *a, **k):
        raise RuntimeError("collector exploded")

    def spy_close(self):
        closed.append(True)
        real_close(self)

    monkeypatch.setattr(SampleSerialCollector, "collect", boom)
    monkeypatch.setattr(SampleSerialCollector, "close", spy_close)
    with pytest.raises(RuntimeError, match="collector exploded"):
        serial_pipeline(cartpole_dqn("err"), seed=0)
    assert closed
    import multiprocessing

    assert multiprocessing.active_children() == []
    assert torch.get_num_threads() == 1


@pytest.mark.convergence
def test_prioritized_dqn_reaches_stop_value_and_feeds_priorities_back(in_tmp_dir, monkeypatch):
    import copy

    from ding.worker import AdvancedReplayBuffer
    from dizoo.classic_control.cartpole.config.cartpole_dqn_priority_config import create_config, main_config

    updates = []
    real_update = AdvancedReplayBuffer.update

    def spy(self, info):
        updates.append(len(info["priority"]))
        return real_update(self, info)

    monkeypatch.setattr(AdvancedReplayBuffer, "update", spy)
    main = copy.deepcopy(main_config)
    main.exp_name = "prio"
    serial_pipeline((main, copy.deepcopy(create_config)), seed=0, max_env_step=5000)
    result = read_result("prio")
    assert result["stop_flag"] is True and result["eval_return"] >= 195
    assert len(updates) == result["train_iter"]  # one priority update per training iteration
    assert set(updates) == {main.policy.learn.batch_size}


def test_a_prioritized_buffer_follows_the_policys_priority_switch(in_tmp_dir, cartpole_dqn, monkeypatch):
    """DQN without priorities on the 'advanced' buffer (whose own default is prioritized) samples uniformly, and the
    saved config says so."""
    from ding.worker import AdvancedReplayBuffer

    seen = []
    real_init = AdvancedReplayBuffer.__init__

    def spy(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        seen.append((self._use_priority, self._use_is_weight))

    monkeypatch.setattr(AdvancedReplayBuffer, "__init__", spy)
    main, create = cartpole_dqn("uniform")
    create.replay_buffer.type = "advanced"
    serial_pipeline((main, create), seed=0, max_train_iter=10)
    assert seen == [(False, False)]
    assert read_config("uniform/total_config.py")[0].policy.other.replay_buffer.priority is False


def test_failed_setup_closes_what_it_started(in_tmp_dir, cartpole_dqn, monkeypatch):
    """An error while building the workers closes the env managers and workers built before it."""
    import ding.worker.builder as builder
    from ding.envs import SyncSubprocessEnvManager

    closed = []
    real_close = SyncSubprocessEnvManager.close

    def spy_close(self):
        closed.append(self)
        real_close(self)

    def broken_buffer(*args, **kwargs):
        raise RuntimeError("buffer construction failed")

    monkeypatch.setattr(SyncSubprocessEnvManager, "close", spy_close)
    monkeypatch.setattr(builder, "create_buffer", broken_buffer)
    main, create = cartpole_dqn("setupfail")
    create.env_manager.type = "subprocess"
    main.env.manager = dict(type="subprocess")
    with pytest.raises(RuntimeError, match="buffer construction failed"):
        serial_pipeline((main, create), seed=0)
    assert len({id(m) for m in closed}) == 2  # the collector's and the evaluator's env managers


def test_random_collect_warm_up_fills_the_buffer_first(in_tmp_dir, cartpole_dqn, monkeypatch):
    from ding.worker import SampleSerialCollector

    calls = []
    real_collect = SampleSerialCollector.collect

    def spy(self, *args, **kwargs):
        calls.append(kwargs.get("random_collect", False))
        return real_collect(self, *args, **kwargs)

    monkeypatch.setattr(SampleSerialCollector, "collect", spy)
    main, create = cartpole_dqn("warmup")
    main.policy.random_collect_size = 256
    serial_pipeline((main, create), seed=0, max_train_iter=10)
    assert calls[0] is True and not any(calls[1:])
    assert read_result("warmup")["env_step"] >= 256


@pytest.mark.parametrize("manager", ["subprocess", "async_subprocess"])
def test_pipeline_over_worker_process_managers(in_tmp_dir, cartpole_dqn, manager):
    """Training and evaluation run over subprocess env managers (the async one answers out of order), and every
    worker process is gone afterwards."""
    import multiprocessing

    main, create = cartpole_dqn(f"mgr_{manager}")
    create.env_manager.type = manager
    main.policy.eval.evaluator.eval_freq = 20
    serial_pipeline((main, create), seed=0, max_env_step=400)
    result = read_result(f"mgr_{manager}")
    assert result["env_step"] >= 400 and result["eval_return"] is not None
    assert len(read_eval_csv(f"mgr_{manager}/log/eval.csv")) >= 3
    assert multiprocessing.active_children() == []
