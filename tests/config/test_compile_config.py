"""compile_config with small fake components: merge order, auto mode, validation, saving, renew_dir."""
from __future__ import annotations

import copy
import logging
import os
import re
import sys
import textwrap
import types

import pytest
from _config_fakes import (
    CREATE,
    MAIN,
    REGISTRATIONS,
    FakeBuffer,
    FakeCollector,
    FakeEnv,
    FakeEnvManager,
    FakeEvaluator,
    FakeLearner,
    FakePolicy,
)
from easydict import EasyDict

from ding.config import claim_exp_dir, compile_config, compile_run_config, read_config
from ding.utils import (
    BUFFER_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    LEARNER_REGISTRY,
    SERIAL_COLLECTOR_REGISTRY,
    SERIAL_COMMANDER_REGISTRY,
    SERIAL_EVALUATOR_REGISTRY,
    ConfigError,
    RegistryError,
)


@pytest.fixture(autouse=True)
def fakes():
    for registry, name, cls in REGISTRATIONS:
        registry.register(name, cls)
    yield
    for registry, name, _ in REGISTRATIONS:
        registry.pop(name, None)


@pytest.fixture
def builtin_names(monkeypatch):
    """The built-in default type names point at fakes for the duration of a test."""
    for registry, name, cls in [
        (ENV_MANAGER_REGISTRY, "base", FakeEnvManager), (LEARNER_REGISTRY, "base", FakeLearner),
        (SERIAL_COLLECTOR_REGISTRY, "sample", FakeCollector), (SERIAL_EVALUATOR_REGISTRY, "interaction", FakeEvaluator),
        (BUFFER_REGISTRY, "advanced", FakeBuffer), (SERIAL_COMMANDER_REGISTRY, "base", FakeEvaluator),
    ]:
        monkeypatch.setitem(registry, name, cls)


def compile_auto(main=MAIN, create=CREATE, **kwargs):
    kwargs.setdefault("save_cfg", False)
    return compile_config(copy.deepcopy(main), auto=True, create_cfg=copy.deepcopy(create), **kwargs)


def with_changes(base: dict, **paths) -> dict:
    """A deep copy of ``base`` with dotted-path keys set (``policy__learn__batch_size=3``)."""
    cfg = copy.deepcopy(base)
    for dotted, value in paths.items():
        *parents, last = dotted.split("__")
        node = cfg
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return cfg


def test_auto_merges_defaults_then_create_types_then_user_values():
    cfg = compile_auto(seed=7)
    assert isinstance(cfg, EasyDict)
    assert (cfg.exp_name, cfg.seed, cfg.policy.cuda) == ("h2t_exp", 7, False)
    assert (cfg.env.type, cfg.env.env_id, cfg.env.frame_skip) == ("h2t_env", "CartPole-v1", 1)
    assert cfg.env.stop_value == 195  # user beats the env class default (100)
    assert (cfg.env.manager.type, cfg.env.manager.max_retry, cfg.env.manager.shared_memory) == ("h2t_manager", 1, False)
    learner = cfg.policy.learn.learner
    assert learner.type == "h2t_learner" and learner.train_iterations == int(1e10)
    assert learner.hook.save_ckpt_after_iter == 500  # the policy's value beats the learner's default (10000)
    assert learner.hook.log_show_after_iter == 100 and learner.hook.my_hook == {"type": "x"}
    assert (cfg.policy.learn.update_per_collect, cfg.policy.learn.batch_size) == (5, 32)
    assert cfg.policy.learn.learning_rate == 0.001
    assert cfg.policy.collect.collector == dict(deepcopy_obs=False, collect_print_freq=100,
                                                cfg_type="FakeCollectorDict", type="h2t_collector",
                                                import_names=["_config_fakes"])
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 20000 and cfg.policy.other.replay_buffer.alpha == 0.6
    assert cfg.policy.other.eps == dict(type="exp", start=0.95, end=0.1, decay=5000)
    assert cfg.policy.other.commander.type == "h2t_commander"
    assert cfg.policy.model == dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 64])


def test_stop_value_and_n_evaluator_episode_are_copied_to_the_evaluator():
    evaluator = compile_auto().policy.eval.evaluator
    assert (evaluator.stop_value, evaluator.n_episode, evaluator.eval_freq) == (195, 4, 40)
    default_env = compile_auto(main=dict(policy=dict())).policy.eval.evaluator
    assert (default_env.stop_value, default_env.n_episode) == (100, 5)  # FakeEnv's stop value, the common default


def test_exp_name_default_and_env_common_keys():
    cfg = compile_auto(main=dict())
    assert cfg.exp_name == "default_experiment"
    assert (cfg.env.collector_env_num, cfg.env.evaluator_env_num, cfg.env.n_evaluator_episode) == (8, 5, 5)


def test_classes_given_positionally_in_documented_order():
    cfg = compile_config(copy.deepcopy(MAIN), FakeEnvManager, FakePolicy, FakeLearner, FakeCollector, FakeEvaluator,
                         FakeBuffer, FakeEnv, None, None, 3, False, None, False)
    assert cfg.seed == 3
    assert cfg.env.env_id == "CartPole-v1" and cfg.env.manager.max_retry == 1
    assert cfg.policy.learn.learner.train_iterations == int(1e10)
    assert cfg.policy.collect.collector.collect_print_freq == 100
    assert cfg.policy.eval.evaluator.render.mode == "train_iter"
    assert cfg.policy.other.replay_buffer.alpha == 0.6
    # the registered names are recorded, so the compiled config also works with auto=True
    assert (cfg.env.type, cfg.env.manager.type, cfg.policy.type) == ("h2t_env", "h2t_manager", "h2t_policy")
    assert cfg.policy.other.replay_buffer.type == "h2t_buffer"


def test_same_result_by_hand_and_auto():
    by_hand = compile_config(copy.deepcopy(MAIN), FakeEnvManager, FakePolicy, FakeLearner, FakeCollector,
                             FakeEvaluator, FakeBuffer, FakeEnv, save_cfg=False)
    auto = compile_auto()
    auto.policy.other.commander = {}  # the only difference: no commander by hand
    assert by_hand == auto


def test_default_learner_and_evaluator_come_from_the_registries(builtin_names):
    cfg = compile_config(copy.deepcopy(MAIN), policy=FakePolicy, save_cfg=False)
    assert cfg.policy.learn.learner.train_iterations == int(1e10) and cfg.policy.learn.learner.type == "base"
    assert cfg.policy.eval.evaluator.eval_freq == 40 and cfg.policy.eval.evaluator.type == "interaction"


def test_missing_default_learner_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ding.worker", types.ModuleType("ding.worker"))  # registers nothing
    monkeypatch.delitem(LEARNER_REGISTRY, "base", raising=False)
    with pytest.raises(RegistryError, match=r"compile_config's default learner \(pass learner=None .*\): "
                                            r"unknown learner type 'base'"):
        compile_config(dict(), policy=FakePolicy, evaluator=None, save_cfg=False)


def test_none_leaves_a_component_out_and_its_section_open():
    cfg = compile_config(dict(policy=dict(learn=dict(learner=dict(anything=1)))), policy=FakePolicy, learner=None,
                         evaluator=None, save_cfg=False)
    assert cfg.policy.learn.learner == dict(hook=dict(save_ckpt_after_iter=500), anything=1)


def test_auto_uses_builtin_default_types(builtin_names):
    cfg = compile_auto(create=dict(env=dict(type="h2t_env"), policy=dict(type="h2t_policy")))
    types_ = (cfg.env.manager.type, cfg.policy.learn.learner.type, cfg.policy.collect.collector.type,
              cfg.policy.eval.evaluator.type, cfg.policy.other.replay_buffer.type, cfg.policy.other.commander.type)
    assert types_ == ("base", "base", "sample", "interaction", "advanced", "base")


def test_policy_preferences_pick_collector_and_buffer(builtin_names):
    cfg = compile_auto(create=dict(env=dict(type="h2t_env"), policy=dict(type="h2t_prio_policy")))
    assert cfg.policy.collect.collector.type == "h2t_episode_collector"
    assert cfg.policy.collect.collector.get_train_sample is False
    assert cfg.policy.other.replay_buffer.type == "h2t_buffer2" and cfg.policy.other.replay_buffer.beta == 0.4


def test_buffer_type_from_main_config(builtin_names):
    main = with_changes(MAIN, policy__other__replay_buffer__type="h2t_buffer2")
    cfg = compile_auto(main=main, create=dict(env=dict(type="h2t_env"), policy=dict(type="h2t_policy")))
    assert cfg.policy.other.replay_buffer.beta == 0.4


def test_on_policy_policy_gets_no_buffer(builtin_names):
    main = with_changes(MAIN, policy__other__replay_buffer__whatever=1)  # no buffer: the section is free-form
    cfg = compile_auto(main=main, create=dict(env=dict(type="h2t_env"), policy=dict(type="h2t_on_policy")))
    assert "type" not in cfg.policy.other.replay_buffer and "alpha" not in cfg.policy.other.replay_buffer
    explicit = compile_auto(create=dict(env=dict(type="h2t_env"), policy=dict(type="h2t_on_policy"),
                                        replay_buffer=dict(type="h2t_buffer")))
    assert explicit.policy.other.replay_buffer.alpha == 0.6  # a buffer the config names is still used


def test_class_argument_wins_in_auto_mode():
    cfg = compile_auto(create=dict(CREATE, replay_buffer=dict(type="h2t_buffer2")), buffer=FakeBuffer)
    assert cfg.policy.other.replay_buffer.alpha == 0.6


def test_unknown_key_names_path_file_and_suggestion():
    main = with_changes(MAIN, policy__learn__update_per_colect=3)
    with pytest.raises(ConfigError, match=r"policy\.learn\.update_per_colect: unknown key \(in cartpole_dqn\.py\); "
                                          r"did you mean 'update_per_collect'\?"):
        compile_auto(main=main, source="cartpole_dqn.py")


def test_all_problems_in_main_and_create_reported_together():
    main = with_changes(MAIN, exp_nam="x", env__manager__shared_memroy=True, policy__collect__collector__deepcopy_ob=1,
                        policy__learn__batch_size="32")
    create = with_changes(CREATE, env_manager__max_retyr=2)
    with pytest.raises(ConfigError) as info:
        compile_auto(main=main, create=create, source="c.py")
    text = str(info.value)
    assert text.startswith("5 problems in the config:")
    for expected in [
        "exp_nam: unknown key (in c.py); did you mean 'exp_name'?",
        "env.manager.shared_memroy: unknown key (in c.py); did you mean 'shared_memory'?",
        "policy.collect.collector.deepcopy_ob: unknown key (in c.py); did you mean 'deepcopy_obs'?",
        "policy.learn.batch_size: expected int, got str '32' (in c.py)",
        "create_config.env_manager.max_retyr: unknown key (in c.py); did you mean 'max_retry'?",
    ]:
        assert expected in text


def test_open_sections_accept_free_keys():
    main = with_changes(
        MAIN,
        policy__model__any_model_kwarg=dict(deep=[1]),  # the policy's open_config_keys
        policy__learn__learner__hook__log_every=dict(type="log", position="after_iter"),  # the learner's
        policy__other__commander__anything=1,  # FakeCommander has no config of its own
        env__import_names=["math"],
        policy__learn__learner__hook__ext_args=dict(q=1),
    )
    cfg = compile_auto(main=main)
    assert cfg.policy.model.any_model_kwarg == dict(deep=[1]) and cfg.policy.other.commander.anything == 1


def test_env_without_config_is_open_but_its_manager_is_checked():
    create = with_changes(CREATE, env__type="h2t_free_env")
    cfg = compile_auto(main=with_changes(MAIN, env__my_level="hard"), create=create)
    assert cfg.env.my_level == "hard"
    with pytest.raises(ConfigError, match=r"^env\.manager\.max_retries: unknown key"):
        compile_auto(main=with_changes(MAIN, env__my_level="hard", env__manager__max_retries=2), create=create)


def test_create_config_unknown_section_and_bad_section():
    with pytest.raises(ConfigError, match=r"create_config\.replay_bufer: unknown section \(in c\.py\); "
                                          r"did you mean 'replay_buffer'\?"):
        compile_auto(create=dict(CREATE, replay_bufer=dict(type="h2t_buffer")), source="c.py")
    with pytest.raises(ConfigError, match=r"create_config\.policy: expected a dict like dict\(type='\.\.\.'"):
        compile_auto(create=dict(CREATE, policy="h2t_policy"))


def test_create_config_unknown_type_is_a_registry_error_with_suggestion():
    with pytest.raises(RegistryError, match=r"create_config\.env\.type \(in c\.py\): unknown env type 'h2t_evn'\. "
                                            r"Did you mean 'h2t_env'"):
        compile_auto(create=with_changes(CREATE, env__type="h2t_evn"), source="c.py")


def test_type_must_be_a_name():
    with pytest.raises(ConfigError, match=r"create_config\.policy\.type .*: expected a registered policy type name "
                                          r"\(a str\), got \['h2t_policy'\]"):
        compile_auto(create=with_changes(CREATE, policy__type=["h2t_policy"]))


def test_conflicting_types_in_main_and_create():
    with pytest.raises(ConfigError, match=r"create_config\.policy\.type is 'h2t_policy' but policy\.type is "
                                          r"'h2t_prio_policy'"):
        compile_auto(main=with_changes(MAIN, policy__type="h2t_prio_policy"))


def test_import_names_must_be_a_list():
    with pytest.raises(ConfigError, match=r"create_config\.env\.import_names .*: import_names must be a list of "
                                          r"module names"):
        compile_auto(create=with_changes(CREATE, env__import_names="my.module"))


def test_auto_needs_create_config_and_a_policy_type():
    with pytest.raises(ConfigError, match=r"compile_config\(auto=True\) needs create_cfg"):
        compile_config(dict(), auto=True, save_cfg=False)
    with pytest.raises(ConfigError, match=r"no policy type; set create_config\.policy\.type"):
        compile_auto(create=dict(env=dict(type="h2t_env")))


def test_import_names_load_a_plugin_env(tmp_path, monkeypatch):
    (tmp_path / "h2t_plugin_env.py").write_text(textwrap.dedent("""
        from ding.utils import ENV_REGISTRY
        from _config_fakes import Configurable

        @ENV_REGISTRY.register('h2t_plugin')
        class PluginEnv(Configurable):
            config = dict(level=3)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        cfg = compile_auto(create=with_changes(CREATE, env__type="h2t_plugin", env__import_names=["h2t_plugin_env"]))
        assert cfg.env.level == 3 and cfg.env.import_names == ["h2t_plugin_env"]
    finally:
        ENV_REGISTRY.pop("h2t_plugin", None)
        sys.modules.pop("h2t_plugin_env", None)


def test_inputs_are_not_mutated():
    main, create = EasyDict(copy.deepcopy(MAIN)), copy.deepcopy(CREATE)
    main_before, create_before = copy.deepcopy(main), copy.deepcopy(create)
    cfg = compile_config(main, auto=True, create_cfg=create, save_cfg=False)
    assert main == main_before and create == create_before
    cfg.policy.learn.learner.hook.my_hook["type"] = "changed"
    assert main.policy.learn.learner.hook.my_hook.type == "x"


def test_saves_total_and_formatted_config(in_tmp_dir):
    cfg = compile_auto(save_cfg=True)
    for name in ("total_config.py", "formatted_total_config.py"):
        main, create = read_config(os.path.join("h2t_exp", name))
        assert main == cfg
        assert create.policy == {"type": "h2t_policy", "import_names": ["_config_fakes"]}
        assert create.learner.type == "h2t_learner"


def test_saved_create_config_names_every_part(in_tmp_dir):
    compile_config(copy.deepcopy(MAIN), FakeEnvManager, FakePolicy, FakeLearner, FakeCollector, FakeEvaluator,
                   FakeBuffer, FakeEnv)
    _, create = read_config("h2t_exp/total_config.py")
    assert {k: v.type for k, v in create.items()} == dict(
        env="h2t_env", env_manager="h2t_manager", policy="h2t_policy", learner="h2t_learner",
        collector="h2t_collector", evaluator="h2t_evaluator", replay_buffer="h2t_buffer")
    assert create.env.import_names == ["_config_fakes"]  # where the class lives, for a fresh process


def test_renew_dir_moves_a_second_run_to_a_timestamped_dir(in_tmp_dir, caplog):
    first = compile_auto(save_cfg=True)
    assert first.exp_name == "h2t_exp"
    with caplog.at_level(logging.WARNING, logger="ding.config"):
        second = compile_auto(save_cfg=True)
    assert re.fullmatch(r"h2t_exp_\d{6}_\d{6}", second.exp_name)
    assert os.path.isfile(os.path.join(second.exp_name, "total_config.py"))
    assert read_config(os.path.join(second.exp_name, "total_config.py"))[0].exp_name == second.exp_name
    assert f"'h2t_exp' already exists (an earlier run's); this run uses '{second.exp_name}'" in caplog.text
    third = compile_auto(save_cfg=True)  # within the same second: still a fresh directory
    assert third.exp_name not in ("h2t_exp", second.exp_name) and os.path.isdir(third.exp_name)


def test_renew_dir_false_reuses_the_dir(in_tmp_dir):
    compile_auto(save_cfg=True)
    again = compile_auto(main=with_changes(MAIN, policy__learn__batch_size=8), save_cfg=True, renew_dir=False)
    assert again.exp_name == "h2t_exp"
    assert read_config("h2t_exp/total_config.py")[0].policy.learn.batch_size == 8
    assert sorted(os.listdir(in_tmp_dir)) == ["h2t_exp"]


def test_compile_run_config_writes_nothing_until_saved(in_tmp_dir):
    compiled = compile_run_config(copy.deepcopy(MAIN), copy.deepcopy(CREATE), seed=3)
    assert os.listdir(in_tmp_dir) == []
    assert compiled.cfg == compile_auto(seed=3)
    os.mkdir("h2t_exp")
    compiled.save()  # into the directory as named (the caller claimed it)
    main, create = read_config("h2t_exp/total_config.py")
    assert main == compiled.cfg and create == compiled.create_cfg
    assert sorted(os.listdir("h2t_exp")) == ["formatted_total_config.py", "total_config.py"]


def test_claim_exp_dir_creates_the_name_or_a_fresh_one(in_tmp_dir):
    assert claim_exp_dir("runs/a") == "runs/a" and os.path.isdir("runs/a")  # parents are made
    again = claim_exp_dir("runs/a")
    assert re.fullmatch(r"runs/a_\d{6}_\d{6}", again) and os.path.isdir(again)
    open("file_exp", "w").close()  # a file of that name is not a directory to reuse either
    assert claim_exp_dir("file_exp").startswith("file_exp_")


_CLAIM = """
import sys, time
from ding.config import claim_exp_dir
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))  # every process claims at the same moment
print(claim_exp_dir("same"))
"""


@pytest.mark.parametrize("attempt", range(3))
def test_processes_claiming_one_name_at_once_get_separate_directories(in_tmp_dir, attempt):
    import subprocess
    import time

    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIM, str(start)], stdout=subprocess.PIPE, text=True)
             for _ in range(6)]
    claimed = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        claimed.append(out.strip())
    assert len(set(claimed)) == 6 and "same" in claimed
    assert sorted(claimed) == sorted(os.listdir(in_tmp_dir))


def test_round_trip_read_compile_save_read_compile(in_tmp_dir):
    config_file = in_tmp_dir / "h2t_cfg.py"
    config_file.write_text(f"main_config = {MAIN!r}\ncreate_config = {CREATE!r}\n")
    main, create = read_config(str(config_file))
    first = compile_config(main, auto=True, create_cfg=create, seed=5, renew_dir=False, source=str(config_file))
    for saved in ("total_config.py", "formatted_total_config.py"):
        main2, create2 = read_config(os.path.join(first.exp_name, saved))
        second = compile_config(main2, auto=True, create_cfg=create2, seed=5, save_cfg=False)
        assert second == first
        assert list(second.policy) == list(first.policy)  # same key order too


def test_saved_type_is_the_class_actually_used(in_tmp_dir):
    compile_auto(create=with_changes(CREATE, replay_buffer__type="h2t_buffer2"), buffer=FakeBuffer, save_cfg=True)
    _, create = read_config("h2t_exp/total_config.py")
    assert create.replay_buffer.type == "h2t_buffer"


def test_missing_default_type_in_auto_mode_says_how_to_choose(monkeypatch):
    monkeypatch.setitem(sys.modules, "ding.worker", types.ModuleType("ding.worker"))  # registers nothing
    monkeypatch.delitem(LEARNER_REGISTRY, "base", raising=False)
    create = {k: v for k, v in CREATE.items() if k != "learner"}
    with pytest.raises(RegistryError, match=r"default learner type \(in c\.py; set create_config\.learner\.type to "
                                            r"choose one\): unknown learner type 'base'"):
        compile_auto(create=create, source="c.py")
