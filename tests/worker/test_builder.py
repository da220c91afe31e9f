"""The one component builder (ding/worker/builder.py): what each side holds, names, defaults, clean-up on failure."""
from __future__ import annotations

import copy

import pytest

from ding.config import compile_run_config
from ding.envs import BaseEnvManager
from ding.utils import ConfigError
from ding.worker import BaseLearner
from ding.worker import builder as builder_module
from ding.worker.builder import build_acting, build_learning


def _cartpole_cfg(exp_name: str):
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = exp_name
    return compile_run_config(main, create, seed=0).cfg


def test_both_sides_over_one_policy(in_tmp_dir):
    cfg = _cartpole_cfg("both")
    acting = build_acting(cfg, policy_fields=("learn", "collect", "eval", "command"), tb_dir="both/log/serial")
    try:
        learning = build_learning(cfg, policy=acting.policy, tb_logger=acting.tb_logger, with_buffer=True)
        try:
            assert learning.policy is acting.policy and isinstance(learning.learner, BaseLearner)
            assert learning.buffer is not None and acting.collector.envstep == 0
            assert acting.evaluator_env is not acting.collector_env
            assert acting.closables[:2] == [acting.collector_env, acting.evaluator_env]
        finally:
            learning.close()
    finally:
        acting.close()
    assert acting.closables == [] and learning.closables == []


def test_a_role_names_its_workers_and_gets_the_policys_default_collector(in_tmp_dir):
    cfg = _cartpole_cfg("role")
    acting = build_acting(cfg, seed=3, collector_cfg={}, instance_name="collector2")
    try:
        assert type(acting.collector).__name__ == "SampleSerialCollector"
        assert acting.tb_logger is None
        assert acting.policy._enable_field == ("collect", "eval")
        assert acting.collector._instance_name == "collector2"
        assert acting.evaluator._instance_name == "collector2_evaluator"
    finally:
        acting.close()
    learning = build_learning(cfg, seed=3, instance_name="learner5")
    try:
        assert learning.buffer is None and learning.learner.instance_name == "learner5"
    finally:
        learning.close()


def test_a_failure_half_way_closes_what_was_built(in_tmp_dir, monkeypatch):
    closed = []
    real_close = BaseEnvManager.close

    def spy_close(self):
        closed.append(self)
        real_close(self)

    def broken(*args, **kwargs):
        raise RuntimeError("evaluator construction failed")

    monkeypatch.setattr(BaseEnvManager, "close", spy_close)
    monkeypatch.setattr(builder_module, "create_serial_evaluator", broken)
    with pytest.raises(RuntimeError, match="evaluator construction failed"):
        build_acting(_cartpole_cfg("broken"))
    assert len({id(m) for m in closed}) == 2  # the collector's and the evaluator's env managers (once or more)


def test_the_policy_is_checked_against_the_env_on_every_side_that_acts(in_tmp_dir):
    cfg = _cartpole_cfg("mismatch")
    cfg.policy.model.action_shape = 5  # CartPole has 2 actions
    with pytest.raises(ConfigError, match="action"):
        build_acting(cfg, instance_name="collector0")
