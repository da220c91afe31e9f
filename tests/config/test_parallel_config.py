"""compile_config_parallel: DI-engine's parallel config layout compiles; typos and unsupported values are named."""
from __future__ import annotations

import copy
import os

import pytest

from ding.config import compile_config_parallel, read_config_with_system
from ding.utils import ConfigError


def _configs(exp="par"):
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    main, create, system = (copy.deepcopy(c) for c in (main_config, create_config, system_config))
    main.exp_name = exp
    system.path_data = f"./{exp}/data"
    system.path_policy = f"./{exp}/policy"
    return main, create, system


def test_di_engine_layout_compiles_with_one_entry_per_role(in_tmp_dir):
    main, create, system = _configs()
    # keys DI-engine's own parallel CartPole config uses
    main.env.collector_episode_num = 2
    main.env.evaluator_episode_num = 1
    main.policy.other.replay_buffer.enable_track_used_data = False
    main.policy.other.commander.update(collector_task_space=2, learner_task_space=1, eval_interval=5)
    create.policy.type = "dqn_command"
    cfg = compile_config_parallel(main, create, system, seed=3)
    assert cfg.seed == 3 and cfg.main.policy.collect.collector.type == "zergling"
    assert cfg.main.policy.other.commander.type == "solo"
    assert {k for k in cfg.system if k[-1].isdigit()} == {"learner0", "collector0", "collector1"}
    assert cfg.system.learner0.type == "flask_fs" and cfg.system.collector1.path_data == "./par/data"
    assert cfg.system.coordinator.heartbeat_timeout == 10.0
    main2, create2, system2 = read_config_with_system(os.path.join("par", "total_config.py"))
    assert system2.collector0.port == 0 and main2.exp_name == "par"


def test_paths_follow_a_renamed_experiment_directory(in_tmp_dir):
    os.makedirs("par")
    cfg = compile_config_parallel(*_configs(), seed=0)
    assert cfg.main.exp_name != "par" and cfg.main.exp_name.startswith("par_")
    assert cfg.system.path_data == f"./{cfg.main.exp_name}/data"
    assert cfg.system.collector0.path_policy == f"./{cfg.main.exp_name}/policy"


def test_system_config_typo_names_the_key_and_the_fix(in_tmp_dir):
    main, create, system = _configs()
    system.coordinator.heartbeat_timout = 3
    with pytest.raises(ConfigError, match=r"system_config\.coordinator\.heartbeat_timout.*heartbeat_timeout"):
        compile_config_parallel(main, create, system, save_cfg=False)


def test_unsupported_values_are_clear_errors(in_tmp_dir):
    main, create, system = _configs()
    main.policy.learn.learner.learner_num = 0
    with pytest.raises(ConfigError, match="learner_num: must be >= 1, got 0"):
        compile_config_parallel(main, create, system, save_cfg=False)
    main, create, system = _configs()
    system.communication_mode = "grpc"
    with pytest.raises(ConfigError, match="communication_mode: only 'auto'"):
        compile_config_parallel(main, create, system, save_cfg=False)
    main, create, system = _configs()
    create.comm_learner.type = "flask_sf"
    with pytest.raises(Exception, match="flask_sf.*flask_fs"):
        compile_config_parallel(main, create, system, save_cfg=False)
    main, create, system = _configs()
    main.policy.collect.collector.update_policy_secnd = 1
    with pytest.raises(ConfigError, match="update_policy_secnd.*update_policy_second"):
        compile_config_parallel(main, create, system, save_cfg=False)


def test_fixed_role_ports_are_connected_by_the_coordinator(in_tmp_dir):
    main, create, system = _configs()
    cfg = compile_config_parallel(main, create, system, save_cfg=False, collector_host="10.0.0.5",
                                  collector_port=23000, coordinator_port=22000)
    assert cfg.system.coordinator.port == 22000
    assert cfg.system.collector1.host == "10.0.0.5" and cfg.system.collector1.port == 23001
    assert cfg.system.coordinator.collector == {"collector0": ["collector0", "10.0.0.5", 23000],
                                                "collector1": ["collector1", "10.0.0.5", 23001]}
    assert cfg.system.coordinator.learner == {}


def test_role_entries_are_checked_and_reach_the_role(in_tmp_dir):
    from ding.parallel.launch.dist import role_config

    main, create, system = _configs()
    system.learner0 = dict(max_data_file_mb=2, sample_cache_mb=32)
    system.auth_token = "k" * 20
    system.coordinator.heartbeat_timeout = 4.0
    cfg = compile_config_parallel(main, create, system, save_cfg=False)
    role = role_config(cfg.system, "learner", "learner0", coordinator_host="10.1.1.1", coordinator_port=9000)
    assert role.max_data_file_mb == 2 and role.sample_cache_mb == 32 and role.auth_token == "k" * 20
    assert role.heartbeat_timeout == 4.0  # the role's heartbeats and patience follow the coordinator's
    assert role.coordinator_host == "10.1.1.1" and role.coordinator_port == 9000
    assert role.path_data == cfg.system.path_data  # the role refuses tasks naming another directory
    main, create, system = _configs()
    system.learner0 = dict(max_data_file_mbs=2)
    with pytest.raises(ConfigError, match=r"system_config\.learner0\.max_data_file_mbs.*max_data_file_mb"):
        compile_config_parallel(main, create, system, save_cfg=False)


def test_a_removed_key_is_one_error_saying_it_was_removed(in_tmp_dir):
    main, create, system = _configs("removed")
    system.collector_nice = 5
    with pytest.raises(ConfigError) as e:
        compile_config_parallel(main, create, system, save_cfg=False, source="cfg.py")
    text = str(e.value)
    assert text.startswith("system_config.collector_nice: this key was removed (") and "cfg.py" in text, text
    assert "unknown key" not in text and "\n" not in text, text
    assert not os.path.exists("removed"), "a refused config left a run directory behind"


@pytest.mark.parametrize("role, key, value, replaced_by", [
    ("learner0", "train_process", False, "trains in its own process"),
    ("learner0", "prefetch_batches", 32, "PREFETCH_BATCHES = 4"),
    ("learner0", "sample_cache_size", 0, "replay_buffer_size decoded samples, bounded by its sample_cache_mb"),
    ("learner0", "max_sample_mb", 128, "capped by the learner's max_data_file_mb"),
    ("learner0", "heartbeat_interval", 0.5, "derived from coordinator.heartbeat_timeout"),
    ("collector1", "master_lost_timeout", 30.0, "derived from coordinator.heartbeat_timeout"),
])
def test_a_removed_role_key_says_it_was_removed_and_what_replaced_it(in_tmp_dir, role, key, value, replaced_by):
    main, create, system = _configs()
    system[role] = {key: value}
    with pytest.raises(ConfigError) as info:
        compile_config_parallel(main, create, system, save_cfg=False)
    message = str(info.value)
    assert message.startswith(f"system_config.{role}.{key}: this key was removed (") and replaced_by in message
    assert "delete it" in message and "unknown key" not in message and "\n" not in message


@pytest.mark.parametrize("section, path, value, replaced_by", [
    ("system", "coordinator.buffer_save_interval", 0.0, "BUFFER_SAVE_INTERVAL_S"),
    ("system", "coordinator.data_wait", 0.1, "DEMAND_WAIT_S"),
    ("system", "coordinator.learner_stall_timeout", 60.0, "half of it is restarted (STALL_SHARE"),
    ("system", "role_start", "exec", "DING_PARALLEL_OFF=role_fork"),
    ("system", "cpu_affinity", "auto", "the OS places every process of the run"),
    ("system", "heartbeat_interval", 0.2, "every tenth of it (HEARTBEATS_PER_TIMEOUT"),
    ("system", "master_lost_timeout", 20.0, "six of them (MASTER_LOST_TIMEOUTS"),
    ("main", "policy.learn.learner.send_policy_interval", 0.0, "SEND_POLICY_INTERVAL_S"),
    ("main", "policy.collect.collector.samples_per_file", 1, "one data file"),
    ("main", "policy.other.commander.eval_task_space", 2, "per two connected collectors"),
    ("main", "policy.other.commander.eval_lead", 0, "2 eval_freq periods past the last one (EVAL_LEAD"),
    ("main", "policy.other.commander.eval_shards", 1, "every evaluation is one task on one collector"),
    ("main", "policy.other.commander.eval_split_after_s", 1.0, "every evaluation is one task on one collector"),
    ("main", "policy.other.commander.eval_split_env_share", 0.0, "every evaluation is one task on one collector"),
    ("main", "policy.other.commander.collect_ahead_samples", 64, "max(batch_size, 2 x n_sample x collectors)"),
])
def test_a_removed_tuning_key_says_what_replaced_it(in_tmp_dir, section, path, value, replaced_by):
    """Issue 37: tuning keys no shipped config set are gone; a config that still sets one is told what replaced it."""
    main, create, system = _configs()
    node = system if section == "system" else main
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    with pytest.raises(ConfigError) as info:
        compile_config_parallel(main, create, system, save_cfg=False, source="cfg.py")
    message = str(info.value)
    shown = "system_config" if section == "system" else "main_config"
    assert message.startswith(f"{shown}.{path}: this key was removed (") and replaced_by in message, message
    assert "delete it" in message and "cfg.py" in message and "unknown key" not in message


def test_rename_experiment_moves_the_shared_directories(in_tmp_dir):
    from ding.config import rename_experiment

    main, create, system = _configs("par_seed0")
    rename_experiment(main, system, "par_seed1")
    assert main.exp_name == "par_seed1"
    assert system.path_data == "./par_seed1/data" and system.path_policy == "./par_seed1/policy"
    system.path_data = "/shared/data"
    rename_experiment(main, system, "other")
    assert system.path_data == "/shared/data"  # a directory outside the experiment stays where it is


def test_platform_other_than_local_and_slurm_is_refused(in_tmp_dir):
    with pytest.raises(ConfigError, match="platform 'k8s': parallel mode runs on 'local' or 'slurm'"):
        compile_config_parallel(*_configs(), save_cfg=False, platform="k8s")


def test_role_not_in_the_config_gets_defaults(in_tmp_dir):
    from ding.parallel.launch.dist import role_config

    cfg = compile_config_parallel(*_configs(), save_cfg=False)
    role = role_config(cfg.system, "collector", "collector9", coordinator_host="127.0.0.1", coordinator_port=9000)
    assert role.host == "127.0.0.1" and role.port == 0 and role.type == "flask_fs"
    assert role.path_data == cfg.system.path_data and role.path_policy == cfg.system.path_policy


def test_on_policy_algorithms_are_refused_in_parallel_mode(in_tmp_dir):
    from ding.worker import SoloCommander

    main, create, system = _configs()
    main.policy.on_policy = True
    cfg = compile_config_parallel(main, create, system, save_cfg=False)
    with pytest.raises(ConfigError, match="on-policy; parallel mode trains off-policy.*serial_onpolicy"):
        SoloCommander(cfg.main)


# Parallel set-up mistakes are held to the serial half's standard: one ConfigError naming every bad value, its key
# path and the file, before any process or server starts.
@pytest.mark.parametrize("system_update, expected", [
    ({"coordinator": {"port": -1}}, "system_config.coordinator.port: must be in [0, 65535], got -1"),
    ({"coordinator": {"port": 70000}}, "system_config.coordinator.port"),
    ({"coordinator": {"heartbeat_timeout": 0}}, "system_config.coordinator.heartbeat_timeout: must be > 0"),
    ({"coordinator": {"collector_task_timeout": -5}}, "system_config.coordinator.collector_task_timeout"),
    ({"coordinator": {"eval_task_timeout": 0}}, "system_config.coordinator.eval_task_timeout"),
    ({"max_restarts": -1}, "system_config.max_restarts"),
    ({"collector0": {"port": -2}}, "system_config.collector0.port"),
])
def test_out_of_range_system_values_are_one_clear_error(in_tmp_dir, system_update, expected):
    main, create, system = _configs("bad_values")
    for key, value in system_update.items():
        if isinstance(value, dict) and isinstance(system.get(key), dict):
            system[key].update(value)
        else:
            system[key] = value
    with pytest.raises(ConfigError) as e:
        compile_config_parallel(main, create, system, seed=0, source="cfg.py")
    assert expected in str(e.value) and "cfg.py" in str(e.value)
    assert not os.path.exists("bad_values"), "a refused config left a run directory behind"


def test_coordinator_port_flag_is_checked_too(in_tmp_dir):
    main, create, system = _configs("bad_flag")
    with pytest.raises(ConfigError, match=r"--coordinator-port: must be in \[0, 65535\], got -1"):
        compile_config_parallel(main, create, system, seed=0, coordinator_port=-1)


def test_shared_directory_that_cannot_be_created_is_one_clear_error(in_tmp_dir):
    from ding.worker import Coordinator

    main, create, system = _configs("nodir")
    with open("a_file", "w") as f:
        f.write("not a directory")
    system.path_data = "./a_file/data"
    cfg = compile_config_parallel(main, create, system, seed=0)
    with pytest.raises(ConfigError, match=r"system_config.path_data: cannot create the shared directory './a_file/data'"):
        Coordinator(cfg, token="t" * 32)


def test_several_learners_are_one_group_led_by_learner0(in_tmp_dir):
    main, create, system = _configs()
    main.policy.learn.learner.learner_num = 2
    system.learner1 = dict(group_timeout=60.0)
    cfg = compile_config_parallel(main, create, system, save_cfg=False, learner_port=23000)
    assert (cfg.system.learner0.learner_num, cfg.system.learner0.learner_rank) == (2, 0)
    assert (cfg.system.learner1.learner_num, cfg.system.learner1.learner_rank) == (2, 1)
    assert cfg.system.learner1.group_timeout == 60.0
    assert list(cfg.system.coordinator.learner) == ["learner0"]  # learner1 talks to learner0 only
    main, create, system = _configs()
    main.policy.learn.learner.learner_num = 2
    create.comm_learner = dict(type="my_learner", import_names=[])
    with pytest.raises(Exception, match="my_learner"):
        compile_config_parallel(main, create, system, save_cfg=False)
