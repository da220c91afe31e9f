"""DI-engine 0.5.3's own Pong files (``pong_dqn_config.py``, ``pong_ppo_config.py``, read from its wheel).

``make test-all`` runs each file unchanged through the ``ding`` command (``cuda=True`` falls back to the CPU with one
warning line); those runs start 16 envs in processes and play 8 full evaluation games, several minutes on 2 cores,
so the default suite runs a reduced variant: the same files read unchanged, then made small (2 collector envs in the
test's process, 1 short evaluation game, a smaller on-policy batch) for a couple of training iterations.
"""
from __future__ import annotations

import importlib.util

import pytest

from ding.config import read_config
from ding.entry.cli import main
from tests.di_engine_files import copy_di_engine_file

from .conftest import read_result

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                                reason="ale-py is not installed (pip install -e '.[atari]')")

PONG = "dizoo/atari/config/serial/pong/"


def _small(cfg: tuple, exp_name: str) -> tuple:
    main_cfg, create_cfg = cfg
    main_cfg.exp_name = exp_name
    main_cfg.env.update(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1, max_episode_frames=400)
    create_cfg.env_manager = dict(type="base")
    return main_cfg, create_cfg


def test_pong_dqn_file_reduced(in_tmp_dir, caplog):
    from ding.entry import serial_pipeline

    cfg = read_config(copy_di_engine_file(PONG + "pong_dqn_config.py", str(in_tmp_dir)))
    assert cfg[0].policy.cuda is True and cfg[0].policy.model.obs_shape == [4, 84, 84]
    main_cfg, create_cfg = _small(cfg, "pong_dqn_small")
    main_cfg.policy.collect.n_sample = 32
    main_cfg.policy.learn.update_per_collect = 1
    policy = serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=2)
    result = read_result("pong_dqn_small")
    assert result["train_iter"] >= 2 and result["env_step"] >= 32
    assert next(policy.learn_mode.get_attribute("model").parameters()).device.type in ("cpu", "cuda")
    warned = [r for r in caplog.records if "policy.cuda=True" in r.getMessage()]
    assert len(warned) <= 1  # one line per process (none where a GPU exists or an earlier test printed it)


def test_pong_ppo_file_reduced(in_tmp_dir):
    from ding.entry import serial_pipeline_onpolicy

    cfg = read_config(copy_di_engine_file(PONG + "pong_ppo_config.py", str(in_tmp_dir)))
    main_cfg, create_cfg = _small(cfg, "pong_ppo_small")
    main_cfg.policy.collect.n_sample = 64
    main_cfg.policy.learn.update(epoch_per_collect=1, batch_size=32)
    serial_pipeline_onpolicy((main_cfg, create_cfg), seed=0, max_train_iter=2)
    result = read_result("pong_ppo_small")
    assert result["train_iter"] >= 2 and result["env_step"] >= 64


@pytest.mark.slow
@pytest.mark.parametrize("name,mode", [("pong_dqn_config.py", "serial"), ("pong_ppo_config.py", "serial_onpolicy")])
def test_pong_files_run_unchanged_through_the_ding_command(in_tmp_dir, name, mode):
    config = copy_di_engine_file(PONG + name, str(in_tmp_dir))
    assert main(["-m", mode, "-c", config, "-s", "0", "--train-iter", "2"]) == 0
    exp_name = read_config(config)[0].get("exp_name") or "default_experiment"
    result = read_result(exp_name)
    assert result["train_iter"] >= 2 and result["env_step"] > 0
