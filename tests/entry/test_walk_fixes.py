"""Steps a literal walk of the docs found broken: a custom policy that declares only what its own code reads trains in
the off-policy loop, one that lacks a key the loop needs gets one error naming it, and the closing line says why a
run ended."""
from __future__ import annotations

import copy

import pytest

from ding.entry import serial_pipeline
from ding.utils import POLICY_REGISTRY, ConfigError

from . import _plugins
from .conftest import read_result


@pytest.fixture
def softmax_q():
    """docs/policies.md's custom policy (it declares no update_per_collect), registered as 'softmax_q', and a
    variant of it without a batch size."""
    from tests.policy.test_policy_docs import python_blocks

    namespace: dict = {}
    block = next(b for b in python_blocks("Writing a custom policy") if "class SoftmaxQPolicy" in b)
    exec(compile(block, "docs/policies.md", "exec"), namespace)

    class NoBatchSize(namespace["SoftmaxQPolicy"]):
        config = dict(learn=dict(batch_size=None))

    POLICY_REGISTRY.register("test_softmax_q_no_batch", NoBatchSize)
    yield namespace["SoftmaxQPolicy"]
    POLICY_REGISTRY.pop("softmax_q", None)
    POLICY_REGISTRY.pop("test_softmax_q_no_batch", None)


def _custom(cartpole_dqn, name: str, policy_type: str, **learn):
    main, create = cartpole_dqn(name)
    main.policy = dict(model=dict(obs_shape=4, action_shape=2), learn=dict(learner=main.policy.learn.learner, **learn))
    create.policy = dict(type=policy_type)
    return main, create


def test_a_policy_without_update_per_collect_trains_with_the_default_of_one(in_tmp_dir, cartpole_dqn, softmax_q):
    """The loop read cfg.learn.update_per_collect and crashed with AttributeError; the config validator refused the
    key when the user added it."""
    serial_pipeline(_custom(cartpole_dqn, "bare", "softmax_q"), seed=0, max_env_step=64)
    one = read_result("bare")["train_iter"]
    assert one >= 2  # one update per collect of 16 samples
    serial_pipeline(_custom(cartpole_dqn, "bare3", "softmax_q", update_per_collect=3), seed=0, max_env_step=64)
    assert read_result("bare3")["train_iter"] == 3 * one


def test_a_policy_without_batch_size_is_one_error_saying_where_to_add_it(in_tmp_dir, cartpole_dqn, softmax_q):
    with pytest.raises(ConfigError, match=r"policy\.learn\.batch_size: .*'test_softmax_q_no_batch' gives it no value; "
                                          r"add it to the policy class's config"):
        serial_pipeline(_custom(cartpole_dqn, "nobatch", "test_softmax_q_no_batch"), seed=0, max_train_iter=2)


def test_the_closing_line_says_which_of_limit_and_hook_ended_the_run(in_tmp_dir, cartpole_dqn, capsys):
    serial_pipeline(cartpole_dqn("limited"), seed=0, max_train_iter=5)
    assert "ding: stopped at its limit (--train-iter / --env-step) after" in capsys.readouterr().out
    main, create = cartpole_dqn("hooked")
    stop = dict(name="stop", type="test_stop_at_iter", position="after_iter", priority=50, ext_args=dict(iter=5))
    main.policy.learn.learner = dict(import_names=["tests.entry._plugins"],
                                     hook=dict(log_show_after_iter=100000, stop=stop))
    serial_pipeline((main, create), seed=0)
    assert _plugins.CALLS and "ding: stopped by a learner hook's stop request after" in capsys.readouterr().out


def test_a_renamed_directory_is_announced_only_when_the_run_set_up(in_tmp_dir, cartpole_dqn, caplog):
    """After a set-up error the run announced '<exp>_<timestamp>', a directory it then removed."""
    import logging
    import os

    os.makedirs("taken")
    main, create = cartpole_dqn("taken")
    main.policy.model.action_shape = 3  # CartPole has 2 actions: refused while the run is set up
    with caplog.at_level(logging.WARNING, logger="ding.config.exp_dir"):
        with pytest.raises(ConfigError):
            serial_pipeline((main, create), seed=0, max_train_iter=2)
    assert sorted(os.listdir(".")) == ["taken"]
    assert "this run uses" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="ding.config.exp_dir"):
        serial_pipeline(cartpole_dqn("taken"), seed=0, max_train_iter=2)
    used = [d for d in os.listdir(".") if d.startswith("taken_")]
    assert len(used) == 1 and f"this run uses '{used[0]}'" in caplog.text


def test_parallel_mode_announces_a_renamed_directory_only_once_its_config_is_in_it(in_tmp_dir, caplog):
    """Parallel mode claimed and announced '<exp>_<timestamp>' before its system config was checked; a config error
    there left the announced directory behind, empty."""
    import logging
    import os

    from ding.config import compile_config_parallel, read_config_with_system, rename_experiment

    main, create, system = read_config_with_system(os.path.join(os.path.dirname(__file__), "..", "..", "config",
                                                                "parallel", "cartpole_dqn.py"))
    rename_experiment(main, system, "taken")  # as --exp-name does
    os.makedirs("taken")
    bad = copy.deepcopy(main)
    bad.policy.learn.learner.learner_num = 0  # refused while the system config is laid out, after the claim
    with caplog.at_level(logging.WARNING, logger="ding.config.exp_dir"):
        with pytest.raises(ConfigError, match="learner_num"):
            compile_config_parallel(bad, create, system, seed=0)
    assert sorted(os.listdir(".")) == ["taken"]
    assert "this run uses" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="ding.config.exp_dir"):
        cfg = compile_config_parallel(main, create, system, seed=0)
    used = [d for d in os.listdir(".") if d.startswith("taken_")]
    assert len(used) == 1 and f"this run uses '{used[0]}'" in caplog.text and cfg.main.exp_name == used[0]
    assert os.path.isfile(os.path.join(used[0], "total_config.py"))
    assert cfg.system.path_data.startswith(f"./{used[0]}/"), cfg.system.path_data  # the roles write there too


def test_a_resume_of_a_renamed_run_is_not_announced_as_a_new_directory(in_tmp_dir, cartpole_dqn, caplog, capsys):
    """docs/resume.md's two commands after `make run`: the first run went to '<exp>_<timestamp>' (announced), and the
    resume, which continues that run, said again "'<exp>' already exists (an earlier run's); this run uses ..." as
    if it had claimed a new directory. It says once where it resumed from, and nothing else about the directory."""
    import logging
    import os

    os.makedirs("again")  # an earlier run's directory (make run's cartpole_dqn_seed0/)
    serial_pipeline(cartpole_dqn("again"), seed=0, max_train_iter=4)
    renamed = [d for d in os.listdir(".") if d.startswith("again_")]
    assert len(renamed) == 1
    capsys.readouterr()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ding.config.exp_dir"):
        serial_pipeline(cartpole_dqn("again"), seed=0, max_train_iter=8, resume=True)
    assert "this run uses" not in caplog.text and "already exists" not in caplog.text
    assert f"ding: resumed from {renamed[0]}/ckpt/iteration_" in capsys.readouterr().out
    assert read_result(renamed[0])["train_iter"] >= 8
