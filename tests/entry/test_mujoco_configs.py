"""DI-engine 0.5.3's own MuJoCo files (hopper_sac, halfcheetah_td3, hopper_onppo) and its Pong envpool file.

Default suite: each file's config, read unchanged, runs a few iterations with its budget knobs shrunk (warm-up,
evaluator envs, subprocesses) so the whole check takes seconds; every key of the file is compiled and validated as
written. ``make test-all`` (slow): the files byte for byte through ``ding -m serial`` / ``serial_onpolicy``, as their
own comments say to run them (``cuda=True`` included: one warning line on a CPU-only machine).
"""
from __future__ import annotations

import importlib.util
import os

import pytest

from ding.config import read_config
from ding.entry import serial_pipeline, serial_pipeline_onpolicy
from ding.entry.cli import main
from tests.di_engine_files import copy_di_engine_file

from .conftest import read_result

MUJOCO = importlib.util.find_spec("mujoco") is not None
ENVPOOL = importlib.util.find_spec("envpool") is not None
pytestmark = pytest.mark.skipif(not MUJOCO, reason="the mujoco extra is not installed (pip install -e '.[mujoco]')")

FILES = {  # file -> (ding mode, pipeline)
    "hopper_sac_config.py": ("serial", serial_pipeline),
    "halfcheetah_td3_config.py": ("serial", serial_pipeline),
    "hopper_onppo_config.py": ("serial_onpolicy", serial_pipeline_onpolicy),
}


def _copy(name: str, tmp: str) -> str:
    return copy_di_engine_file(f"dizoo/mujoco/config/{name}", tmp)


@pytest.mark.parametrize("name", sorted(FILES))
def test_di_engine_mujoco_file_runs_a_few_iterations(in_tmp_dir, name):
    main_cfg, create_cfg = read_config(_copy(name, str(in_tmp_dir)))
    assert main_cfg.policy.cuda is True and main_cfg.env.env_id.endswith("-v3")
    # the budget knobs only: fewer warm-up steps, evaluator envs and episodes, envs in this process
    if "random_collect_size" in main_cfg.policy:
        main_cfg.policy.random_collect_size = 300
    if main_cfg.policy.collect.n_sample > 256:
        main_cfg.policy.collect.n_sample = 256
    main_cfg.env.collector_env_num = min(main_cfg.env.collector_env_num, 2)
    main_cfg.env.evaluator_env_num = main_cfg.env.n_evaluator_episode = 1
    main_cfg.env.max_episode_steps = 200  # HalfCheetah never falls: its evaluation episode would be 1,000 steps
    create_cfg.env_manager.type = "base"
    _, pipeline = FILES[name]
    pipeline((main_cfg, create_cfg), seed=0, max_train_iter=3)
    result = read_result(main_cfg.exp_name)
    assert result["train_iter"] >= 3 and result["env_step"] >= 256
    total = read_config(os.path.join(main_cfg.exp_name, "total_config.py"))[0]
    assert total.policy.cuda is True  # kept as written; the run went to the CPU


# the CLI's budget flags for "a few hundred iterations" of each file, as written: SAC/TD3 train once per env step
# after the file's random warm-up (10k / 25k steps); PPO trains 10 epochs x 16 batches = 160 iterations a collect
CLI_BUDGET = {
    "hopper_sac_config.py": lambda cfg: ["--env-step", str(cfg.policy.random_collect_size + 300)],
    "halfcheetah_td3_config.py": lambda cfg: ["--env-step", str(cfg.policy.random_collect_size + 300)],
    "hopper_onppo_config.py": lambda cfg: ["--train-iter", "320"],
}


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", sorted(FILES))
def test_di_engine_mujoco_file_runs_unchanged_through_the_ding_command(in_tmp_dir, name, capfd):
    """The file byte for byte through ``ding -m serial`` / ``serial_onpolicy`` (its 8-10 envs in subprocesses, its
    warm-up and first evaluation), a few hundred training iterations, then a clean exit."""
    path = _copy(name, str(in_tmp_dir))
    with open(path, "rb") as f:
        written = f.read()
    mode, _ = FILES[name]
    cfg = read_config(path)[0]
    assert main(["-m", mode, "-c", path, "-s", "0", *CLI_BUDGET[name](cfg)]) == 0
    result = read_result(cfg.exp_name)
    assert result["train_iter"] >= 300 and result["ended"] == "limit" and result["eval_return"] is not None
    with open(path, "rb") as f:
        assert f.read() == written  # ran unchanged
    err = capfd.readouterr().err
    assert err.count("policy.cuda=True, but torch has no usable CUDA device") <= 1


PONG_ENVPOOL = "dizoo/atari/config/serial/pong/pong_dqn_envpool_config.py"


@pytest.mark.skipif(not ENVPOOL, reason="the envpool extra is not installed (pip install -e '.[envpool]')")
def test_pong_dqn_envpool_file_runs_a_few_iterations(in_tmp_dir):
    """DI-engine's pong_dqn_envpool_config.py: env type 'atari' (dizoo/atari) with env_manager 'env_pool'."""
    pytest.importorskip("dizoo.atari.envs", reason="dizoo/atari (the atari env type) is not in this tree yet")
    main_cfg, create_cfg = read_config(copy_di_engine_file(PONG_ENVPOOL, str(in_tmp_dir)))
    assert create_cfg.env_manager.type == "env_pool"
    main_cfg.env.collector_env_num = main_cfg.env.collector_batch_size = 2
    main_cfg.env.evaluator_env_num = main_cfg.env.evaluator_batch_size = main_cfg.env.n_evaluator_episode = 1
    main_cfg.policy.collect.n_sample = 32
    main_cfg.policy.learn.update_per_collect = 1
    main_cfg.env.max_episode_frames = 160  # the first evaluation: 40 agent steps, not a whole game of Pong
    serial_pipeline((main_cfg, create_cfg), seed=0, max_train_iter=2)
    assert read_result(main_cfg.exp_name)["train_iter"] >= 2


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.skipif(not ENVPOOL, reason="the envpool extra is not installed (pip install -e '.[envpool]')")
def test_pong_dqn_envpool_file_runs_unchanged_through_the_ding_command(in_tmp_dir):
    pytest.importorskip("dizoo.atari.envs", reason="dizoo/atari (the atari env type) is not in this tree yet")
    path = copy_di_engine_file(PONG_ENVPOOL, str(in_tmp_dir))
    assert main(["-m", "serial", "-c", path, "-s", "0", "--train-iter", "2"]) == 0
    assert read_result(read_config(path)[0].exp_name)["train_iter"] >= 2
