"""ColumnBatch: a batch stacked per field once, where the samples are read (ding/utils/data/column_batch.py), and the
built-in policies' learn steps on it against the same samples as a list."""
from __future__ import annotations

import copy
import importlib
import pickle

import numpy as np
import pytest
import torch

from ding.config import compile_run_config
from ding.policy import DQNPolicy
from ding.utils.data import ColumnBatch, default_collate, learn_takes_columns, stack_field
from ding.worker.builder import build_acting, build_learning


def _samples(n=6):
    rng = np.random.default_rng(0)
    return [dict(obs=rng.standard_normal(4).astype(np.float32), action=np.array(i % 2),
                 reward=np.array([float(i)], np.float32), done=i == 3, rid=f"f:{i}", idx=i, w=0.5 * i,
                 nested={"a": np.full(2, i, np.uint8), "b": float(i)}, ragged=np.zeros(i % 3))
            for i in range(n)]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def test_each_column_is_what_stacking_the_samples_gives_and_survives_pickling():
    samples = _samples()
    batch = pickle.loads(pickle.dumps(ColumnBatch.from_samples(samples)))
    assert len(batch) == 6 and set(batch.keys()) == set(samples[0])
    for key in ("obs", "action", "reward", "done", "rid", "idx", "w", "nested"):
        assert _same(stack_field(batch, key), default_collate([s[key] for s in samples])), key
        assert _same(stack_field(samples, key), stack_field(batch, key)), key
    with pytest.raises(ValueError, match="different shapes"):  # the same error, where the field is stacked
        stack_field(batch, "ragged")
    assert batch.values("rid") == [s["rid"] for s in samples] and batch.values("idx") == list(range(6))
    row = batch[4]
    assert "obs" in row and "absent" not in row and float(row["obs"][0]) == pytest.approx(samples[4]["obs"][0])
    assert row["rid"] == "f:4" and len(list(batch)) == 6 and batch[-1]["idx"] == 5
    with pytest.raises(IndexError):
        batch[6]


def test_a_field_some_samples_lack_fails_where_it_is_stacked_and_extra_fields_win():
    samples = _samples(4)
    del samples[2]["w"]
    batch = pickle.loads(pickle.dumps(ColumnBatch.from_samples(samples, {"idx": [10, 11, 12, 13], "IS": [1.0] * 4})))
    assert "w" in batch[0] and "w" not in batch[2]
    with pytest.raises(KeyError, match="sample 2"):
        batch.column("w")
    assert batch.values("w") == [0.0, 0.5, None, 1.5]
    assert batch.values("idx") == [10, 11, 12, 13] and batch.column("IS").dtype == torch.float32
    with pytest.raises(ValueError, match="extra field 'IS' has 3 values for 4 samples"):
        ColumnBatch.from_samples(samples, {"IS": [1.0] * 3})
    with pytest.raises(ValueError, match="no samples"):
        ColumnBatch.from_samples([])


def test_only_a_policy_class_that_says_so_itself_takes_columns():
    class MyDQN(DQNPolicy):  # a user's subclass may read the samples its own way: it is given sample dicts
        pass

    assert learn_takes_columns(DQNPolicy.__new__(DQNPolicy))
    assert not learn_takes_columns(MyDQN.__new__(MyDQN))


CONFIGS = {
    "dqn": "dizoo.classic_control.cartpole.config.cartpole_dqn_config",
    "dqn_priority": "dizoo.classic_control.cartpole.config.cartpole_dqn_priority_config",
    "c51": "dizoo.classic_control.cartpole.config.cartpole_c51_config",
    "rainbow": "dizoo.classic_control.cartpole.config.cartpole_rainbow_config",
    "r2d2": "dizoo.classic_control.cartpole.config.cartpole_r2d2_config",
    "ppo": "dizoo.classic_control.cartpole.config.cartpole_ppo_config",
    "a2c": "dizoo.classic_control.cartpole.config.cartpole_a2c_config",
    "sac": "dizoo.classic_control.pendulum.config.pendulum_sac_config",
    "ddpg": "dizoo.classic_control.pendulum.config.pendulum_ddpg_config",
    "td3": "dizoo.classic_control.pendulum.config.pendulum_td3_config",
    "ppo_continuous": "dizoo.classic_control.pendulum.config.pendulum_ppo_config",
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_learn_step_on_a_column_batch_is_the_learn_step_on_the_samples(name, in_tmp_dir):
    mod = importlib.import_module(CONFIGS[name])
    main, create = copy.deepcopy(mod.main_config), copy.deepcopy(mod.create_config)
    main.exp_name = f"cols_{name}"
    main.env.collector_env_num, main.env.evaluator_env_num = 2, 1
    create.env_manager.type = "base"
    cfg = compile_run_config(main, create, seed=0).cfg
    acting = build_acting(cfg, seed=0)
    try:
        samples = acting.collector.collect(n_sample=64, train_iter=0, policy_kwargs={"eps": 0.5})
    finally:
        acting.close()
    samples = samples[:max(2, min(len(samples), 32))]
    if cfg.policy.get("priority", False):
        for i, s in enumerate(samples):
            s.update(IS=np.float32(0.5 + i / len(samples)), replay_unique_id=f"u{i}", replay_buffer_idx=i)
    outputs, params = [], []
    for data in (samples, pickle.loads(pickle.dumps(ColumnBatch.from_samples(samples)))):
        learning = build_learning(cfg, seed=0, exp_name=f"cols_{name}")
        try:
            policy = learning.policy
            assert learn_takes_columns(policy.learn_mode.forward.__self__)
            before = [p.detach().clone() for p in policy.learn_mode.get_attribute("model").parameters()]
            torch.manual_seed(1)
            learning.learner.train(data)
            outputs.append(learning.learner.log_buffer["scalar"].copy())
            params.append([p.detach().clone() for p in policy.learn_mode.get_attribute("model").parameters()])
            assert any(not torch.equal(a, b) for a, b in zip(before, params[-1]))  # the step trained
            if cfg.policy.get("priority", False):
                info = learning.learner.priority_info
                assert info["replay_unique_id"] == [f"u{i}" for i in range(len(samples))]
                assert info["replay_buffer_idx"] == list(range(len(samples)))
        finally:
            learning.close()
    listed, columned = outputs
    assert listed.keys() == columned.keys() and "train_time" in listed
    for key in listed:
        if key != "train_time":
            assert listed[key] == pytest.approx(columned[key], rel=1e-6, abs=1e-7), key
    assert all(torch.equal(a, b) for a, b in zip(*params))


def test_split_gives_views_of_consecutive_samples_and_extra_fields_may_be_missing_for_some():
    samples = _samples(6)
    extra = {"IS": [1.0, 2.0, 3.0, ColumnBatch.MISSING, ColumnBatch.MISSING, ColumnBatch.MISSING]}
    whole = pickle.loads(pickle.dumps(ColumnBatch.from_samples(samples, extra)))
    first, empty, second = whole.split([3, 0, 3])
    assert (len(first), len(empty), len(second)) == (3, 0, 3)
    for part, rows in ((first, samples[:3]), (second, samples[3:])):
        for key in ("obs", "action", "reward", "done", "rid", "idx", "nested"):
            assert _same(part.column(key), default_collate([s[key] for s in rows])), key
    assert first.column("IS").tolist() == [1.0, 2.0, 3.0] and "IS" not in second[0]
    with pytest.raises(KeyError):
        second.column("IS")
    first.column("obs")[0, 0] = 99.0  # a view: nothing was copied
    assert whole.column("obs")[0, 0].item() == 99.0
    with pytest.raises(ValueError, match="do not add up"):
        whole.split([4, 4])
