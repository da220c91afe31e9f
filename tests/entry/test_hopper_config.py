"""config/mujoco/hopper_sac.py runs (a reduced run here; the budget it documents is measured in docs/benchmarks.md)
and holds the values that measurement used (tests/benchmark/bench_mujoco.py --hparams di-engine-utd2)."""
from __future__ import annotations

import importlib.util
import os

import pytest

from ding.config import read_config
from ding.entry import serial_pipeline

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "config", "mujoco", "hopper_sac.py")


def test_the_hopper_config_holds_the_measured_values():
    from tests.benchmark.bench_mujoco import sac_values

    main, create = read_config(CONFIG)
    v = sac_values("di-engine-utd2")
    learn = main.policy.learn
    assert (learn.update_per_collect, learn.learning_rate_q, learn.learning_rate_policy, learn.auto_alpha,
            learn.alpha) == (v["utd"], v["lr_q"], v["lr_policy"], v["auto_alpha"], v["alpha"])
    assert main.env.stop_value == 1000 and create.env.type == "mujoco" and main.policy.random_collect_size == 10000


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is None,
                    reason="the mujoco extra is not installed (pip install -e '.[mujoco]')")
def test_the_hopper_config_trains(in_tmp_dir):
    main, create = read_config(CONFIG)
    main.policy.random_collect_size = 200
    main.env.evaluator_env_num = main.env.n_evaluator_episode = 1
    main.policy.eval.evaluator.eval_freq = 100
    serial_pipeline((main, create), seed=0, max_env_step=300)
    result = read_result("hopper_sac_seed0")
    assert result["ended"] == "limit" and result["train_iter"] >= 40 and result["eval_return"] is not None
