"""Allowed values (``config_ranges``): compile_config names every key whose value is out of range."""
from __future__ import annotations

import copy
import inspect
import re

import pytest

from ding.config import compile_config
from ding.config.ranges import at_least, between, find_range_problems, one_of, ranges_of, shape, sizes, undeclared_paths
from ding.model import create_model
from ding.utils import ConfigError

CARTPOLE = "dizoo.classic_control.cartpole.config.cartpole_dqn_config"


def cartpole(**changes):
    """The shipped CartPole DQN config with ``changes`` ({'a.b.c': value}) applied."""
    import importlib

    module = importlib.import_module(CARTPOLE)
    main, create = copy.deepcopy(module.main_config), copy.deepcopy(module.create_config)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = main
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return main, create


def compile_(main, create, **kw):
    return compile_config(main, auto=True, create_cfg=create, save_cfg=False, source="cartpole_dqn.py", **kw)


# one bad value per class of key: loop sizes, counts, rates, probabilities, choices, timeouts
BAD_VALUES = [
    ("policy.collect.n_sample", 0, "must be >= 1, got 0"),
    ("policy.learn.update_per_collect", -5, "must be >= 1, got -5"),
    ("policy.learn.batch_size", 0, "must be >= 1, got 0"),
    ("policy.collect.n_episode", 0, "must be >= 1, got 0"),
    ("policy.collect.unroll_len", 0, "must be >= 1, got 0"),
    ("policy.random_collect_size", -1, "must be >= 0, got -1"),
    ("policy.nstep", 0, "must be >= 1, got 0"),
    ("policy.learn.learning_rate", 0.0, "must be > 0, got 0.0"),
    ("policy.learn.learning_rate", -1e-3, "must be > 0, got -0.001"),
    ("policy.discount_factor", 1.5, r"must be in \[0, 1\], got 1.5"),
    ("policy.discount_factor", -0.1, r"must be in \[0, 1\], got -0.1"),
    ("policy.other.eps.type", "cosine", "'cosine' is not 'exp' or 'linear'"),
    ("policy.other.eps.start", 1.2, r"must be in \[0, 1\], got 1.2"),
    ("policy.other.eps.decay", 0, "must be > 0, got 0"),
    ("policy.other.replay_buffer.replay_buffer_size", 0, "must be >= 1, got 0"),
    ("policy.other.replay_buffer.replay_buffer_start_size", -1, "must be >= 0, got -1"),
    ("policy.other.replay_buffer.seed", "abc", "expected an int >= 0, got str 'abc'"),
    ("policy.eval.evaluator.eval_freq", 0, "must be >= 1, got 0"),
    ("policy.learn.learner.checkpoint.keep_last", -1, "must be >= 0, got -1"),
    ("policy.learn.learner.nan_policy", "ignore", "'ignore' is not 'raise' or 'warn'"),
    ("policy.collect.collector.collect_print_freq", -1, "must be >= 0, got -1"),
    ("env.collector_env_num", 0, "must be >= 1, got 0"),
    ("env.evaluator_env_num", -2, "must be >= 1, got -2"),
    ("env.n_evaluator_episode", 0, "must be >= 1, got 0"),
    ("env.manager.max_retry", 0, "must be >= 1, got 0"),
    ("env.manager.reset_timeout", 0, "must be > 0, got 0"),
    ("env.manager.step_timeout", -1.0, "must be > 0, got -1.0"),
    ("env.manager.retry_type", "again", "'again' is not 'reset' or 'renew'"),
]


@pytest.mark.parametrize("path,value,why", BAD_VALUES, ids=[f"{p}={v}" for p, v, _ in BAD_VALUES])
def test_out_of_range_value_is_named_with_key_path_and_file(path, value, why):
    main, create = cartpole(**{path: value})
    with pytest.raises(ConfigError, match=rf"{re.escape(path)}: {why} \(in cartpole_dqn\.py\)"):
        compile_(main, create)


def test_advanced_buffer_and_subprocess_manager_limits():
    main, create = cartpole(**{"policy.other.replay_buffer.beta": 2.0, "env.manager.wait_num": 0})
    create.replay_buffer.type = "advanced"
    create.env_manager.type = "async_subprocess"
    with pytest.raises(ConfigError) as info:
        compile_(main, create)
    msg = str(info.value)
    assert "policy.other.replay_buffer.beta: must be in [0, 1], got 2.0" in msg
    assert "env.manager.wait_num: must be >= 1, got 0" in msg


def test_every_problem_is_listed_at_once():
    main, create = cartpole(**{"policy.collect.n_sample": 0, "policy.learn.batch_size": -1,
                               "env.collector_env_num": 0})
    with pytest.raises(ConfigError, match=r"^3 problems in the config:\n") as info:
        compile_(main, create)
    lines = str(info.value).splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == [
        "env.collector_env_num", "policy.learn.batch_size", "policy.collect.n_sample"]


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_seed_out_of_range(seed):
    main, create = cartpole()
    with pytest.raises(ConfigError, match=rf"seed: must be in \[0, 4294967295\], got {seed} \(set by `ding -s N`"):
        compile_(main, create, seed=seed)


def test_unset_and_unlimited_values_pass():
    main, create = cartpole(**{"policy.collect.n_episode": None, "env.manager.step_timeout": None,
                               "env.manager.episode_num": float("inf")})
    cfg = compile_(main, create, seed=2**32 - 1)
    assert cfg.env.manager.episode_num == float("inf") and cfg.seed == 2**32 - 1


@pytest.mark.parametrize("exp_name", [5, ["run"]])
def test_exp_name_must_be_a_string(exp_name):
    main, create = cartpole(exp_name=exp_name)
    with pytest.raises(ConfigError, match=r"exp_name: expected str"):
        compile_(main, create)


def test_exp_name_under_a_file_is_refused(in_tmp_dir):
    (in_tmp_dir / "notes.txt").write_text("x")
    for name in ("notes.txt", "notes.txt/run", "./notes.txt/a/b"):
        main, create = cartpole(exp_name=name)
        with pytest.raises(ConfigError, match=r"exp_name: .* but 'notes.txt' is a file \(in cartpole_dqn\.py\); "
                                              r"choose another exp_name"):
            compile_(main, create)
    main, create = cartpole(exp_name="runs/fresh/run")  # directories that do not exist yet are fine
    assert compile_(main, create).exp_name == "runs/fresh/run"


# ---- the model's keyword arguments (policy.model, checked when the model is built)
@pytest.mark.parametrize("key,value,why", [
    ("encoder_hidden_size_list", [128, 0, 64], r"item 1 of \[128, 0, 64\]: must be >= 1, got 0"),
    ("encoder_hidden_size_list", [], r"expected a list of ints >= 1 with at least 1 item\(s\), got \[\]"),
    ("obs_shape", "4", r"expected a list of ints >= 1 \(or a single int\), got str '4'"),
    ("obs_shape", 0, r"must be >= 1, got 0"),
    ("action_shape", 2.5, r"expected an int >= 1, got 2.5"),
    ("head_layer_num", -1, r"must be >= 0, got -1"),
    ("norm_type", "GN", r"'GN' is not 'BN' or 'LN'"),
])
def test_model_arguments_out_of_range_name_the_key(key, value, why):
    cfg = dict(type="dqn", obs_shape=4, action_shape=2)
    cfg[key] = value
    with pytest.raises(ConfigError, match=rf"policy\.model\.{key}: {why}"):
        create_model(cfg, where="policy.model")


def test_model_ranges_are_checked_through_the_pipeline_set_up(in_tmp_dir):
    from ding.entry import serial_pipeline

    main, create = cartpole(**{"policy.model.encoder_hidden_size_list": [64, -8], "exp_name": "hidden"})
    with pytest.raises(ConfigError, match=r"policy\.model\.encoder_hidden_size_list: item 1 .*must be >= 1, got -8"):
        serial_pipeline((main, create), seed=0)


# ---- the declarations themselves
def _registered_components():
    import ding.envs  # noqa: F401 -- registrations
    import ding.policy  # noqa: F401
    import ding.worker  # noqa: F401
    import dizoo.classic_control.cartpole.envs  # noqa: F401
    import dizoo.classic_control.pendulum.envs  # noqa: F401
    from ding.utils import ALL_REGISTRIES

    seen = {}
    for reg_name, registry in ALL_REGISTRIES.items():
        for name, obj in registry.items():
            if inspect.isclass(obj) and ranges_of(obj):
                seen.setdefault(obj, f"{reg_name}:{name}")
    return seen


def test_every_declared_range_names_a_real_key_and_the_defaults_fit():
    components = _registered_components()
    assert len(components) >= 12  # managers, env wrapper, policies, learner, collectors, evaluators, buffers, models
    for cls, where in components.items():
        ranges = ranges_of(cls)
        if hasattr(cls, "default_config"):
            default = cls.default_config()
            assert undeclared_paths(ranges, default) == [], where
            assert find_range_problems(default, ranges) == [], where
        else:  # a model: the declared keys are its keyword arguments, their defaults fit
            params = inspect.signature(cls).parameters
            assert set(ranges) <= set(params), where
            defaults = {k: p.default for k, p in params.items() if p.default is not p.empty}
            assert find_range_problems(defaults, ranges) == [], where


def test_a_declared_path_that_is_not_a_key_is_a_component_bug():
    from ding.policy import DQNPolicy

    class TypoPolicy(DQNPolicy):
        config_ranges = {"learn.batch_sz": at_least(1)}

    main, create = cartpole()
    with pytest.raises(TypeError, match=r"TypoPolicy\.config_ranges names \['learn\.batch_sz'\]"):
        compile_config(main, policy=TypoPolicy, auto=True, create_cfg=create, save_cfg=False)


def test_subclass_ranges_extend_and_override_the_base():
    class Base:
        config_ranges = {"a": at_least(0), "b": at_least(0)}

    class Child(Base):
        config_ranges = {"b": between(0, 1), "c": one_of("x")}

    assert ranges_of(Child) == {"a": at_least(0), "b": between(0, 1), "c": one_of("x")}
    with pytest.raises(TypeError, match=r"Bad\.config_ranges must map dotted key paths to constraints"):
        ranges_of(type("Bad", (), {"config_ranges": {"a": 1}}))


@pytest.mark.parametrize("constraint,value,why", [
    (at_least(1), True, "expected a number >= 1, got bool True"),
    (at_least(1, integer=True), 1.5, "expected an int >= 1, got 1.5"),
    (at_least(1, integer=True), float("inf"), None),
    (between(0, 1, low_open=True), 0, r"must be in (0, 1], got 0"),
    (between(0, 1), float("nan"), "must be in [0, 1], got nan"),
    (one_of("a", "b", "c"), "d", "'d' is not 'a', 'b' or 'c'"),
    (one_of(1), True, "True is not 1"),
    (shape(), (3, 84, 84), None),
    (sizes(), "64", "expected a list of ints >= 1, got str '64'"),
])
def test_constraint_messages(constraint, value, why):
    assert constraint.problem(value) == why
