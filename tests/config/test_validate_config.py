"""validate_config: unknown keys with suggestions, wrong types, open sections."""
from __future__ import annotations

import pytest

from ding.config import find_config_problems, validate_config
from ding.utils import ConfigError

SCHEMA = dict(
    exp_name="default_experiment",
    env=dict(stop_value=float("inf"), collector_env_num=8, manager=dict(shared_memory=True, step_timeout=None)),
    policy=dict(
        cuda=False,
        model=dict(),
        learn=dict(update_per_collect=3, batch_size=64, learning_rate=1e-3, learner=dict(hook=dict(save=100))),
        other=dict(eps=dict(type="exp", decay=10000), hidden=[64, 64]),
    ),
)


def test_valid_config_passes():
    validate_config(dict(policy=dict(learn=dict(batch_size=32), model=dict(anything=1))), SCHEMA, ())


def test_unknown_key_names_path_source_and_closest_key():
    user = dict(policy=dict(learn=dict(update_per_colect=5)))
    with pytest.raises(ConfigError, match=r"policy\.learn\.update_per_colect: unknown key \(in cartpole_dqn\.py\); "
                                          r"did you mean 'update_per_collect'\?"):
        validate_config(user, SCHEMA, (), source="cartpole_dqn.py")


def test_source_defaults_to_dict_marker():
    with pytest.raises(ConfigError, match=r"polcy: unknown key \(in <dict>\); did you mean 'policy'\?"):
        validate_config(dict(polcy=dict()), SCHEMA, ())


def test_no_close_match_lists_valid_keys():
    with pytest.raises(ConfigError, match=r"env\.zzz: unknown key .*; valid keys here: stop_value, collector_env_num, "
                                          r"manager$"):
        validate_config(dict(env=dict(zzz=1)), SCHEMA, ())


def test_every_problem_reported_together_one_per_line():
    user = dict(
        exp_nme="x",
        env=dict(collector_env_num="8", manager=dict(shared_memroy=False)),
        policy=dict(learn=dict(batch_sise=3, learning_rate="fast")),
    )
    with pytest.raises(ConfigError) as info:
        validate_config(user, SCHEMA, (), source="c.py")
    lines = str(info.value).splitlines()
    assert lines[0] == "5 problems in the config:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "exp_nme", "env.collector_env_num", "env.manager.shared_memroy", "policy.learn.batch_sise",
        "policy.learn.learning_rate",
    ]
    assert all("(in c.py)" in line for line in lines[1:])


@pytest.mark.parametrize("default, value", [
    (64, 128), (64, float("inf")), (1e-3, 1), (1e-3, 0.5), (False, True), ("exp", "linear"), ([64], (32, 32)),
    ((1, 2), [3]), (dict(a=1), dict(a=2)), (None, "anything"), (None, dict(x=1)), (64, None), (dict(a=1), None),
])
def test_accepted_types(default, value):
    assert find_config_problems(dict(k=value), dict(k=default)) == []


@pytest.mark.parametrize("default, value, message", [
    (False, 1, r"k: expected bool \(True/False\), got int 1"),
    (64, True, r"k: expected int, got bool True"),
    (64, 0.5, r"k: expected int, got float 0.5"),
    (64, 1e5, r"k: expected int, got float 100000.0; write int\(100000.0\) or 100000"),
    (64, "64", r"k: expected int, got str '64'"),
    (1e-3, "0.001", r"k: expected float \(or int\), got str '0.001'"),
    ("exp", 3, r"k: expected str, got int 3"),
    (dict(a=1), 3, r"k: expected a dict \(a config section\), got int 3"),
    (3, dict(a=1), r"k: expected int, got EasyDict|k: expected int, got dict"),
    ([64, 64], 64, r"k: expected a list or tuple, got int 64"),
])
def test_wrong_types(default, value, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(dict(k=value), dict(k=default), (), source="s.py")


def test_open_section_accepts_anything_below_it():
    user = dict(policy=dict(learn=dict(learner=dict(hook=dict(my_hook=dict(type="x", position="after_iter"),
                                                              save=dict(freq=5))))))
    validate_config(user, SCHEMA, ["policy.learn.learner.hook"])
    with pytest.raises(ConfigError, match=r"policy\.learn\.learner\.hook\.my_hook: unknown key"):
        validate_config(user, SCHEMA, [])


def test_closed_section_inside_open_one_is_checked():
    user = dict(env=dict(my_env_key=1, manager=dict(shared_memroy=False)))
    with pytest.raises(ConfigError, match=r"^env\.manager\.shared_memroy: unknown key") as info:
        validate_config(user, SCHEMA, ["env"], closed_paths=["env.manager"])
    assert "my_env_key" not in str(info.value)


def test_empty_dict_default_is_a_placeholder():
    validate_config(dict(policy=dict(model=dict(obs_shape=4, encoder=dict(x=[1])))), SCHEMA, ())


def test_import_names_and_ext_args_are_free_everywhere():
    validate_config(dict(env=dict(import_names=["a"], manager=dict(ext_args=dict(q=1)))), SCHEMA, ())


def test_non_string_key_is_reported():
    with pytest.raises(ConfigError, match=r"env\.1: config keys must be strings"):
        validate_config(dict(env={1: 2}), SCHEMA, ())


def test_an_open_section_must_still_be_a_section():
    with pytest.raises(ConfigError, match=r"policy\.model: expected a dict \(a config section\), got int 3"):
        validate_config(dict(policy=dict(model=3)), SCHEMA, ["policy.model"])
    with pytest.raises(ConfigError, match=r"env: expected a dict \(a config section\), got str 'cartpole'"):
        validate_config(dict(env="cartpole"), SCHEMA, ["env"])
