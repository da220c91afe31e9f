"""Learner-hook plugins inside serial_pipeline: loaded by type name, stopping training, failing loudly."""
from __future__ import annotations

import os

import pytest

from ding.entry import serial_pipeline
from ding.utils import ConfigError, RegistryError

from . import _plugins
from .conftest import read_result


def _with_hooks(cartpole_dqn, name, **hooks):
    main, create = cartpole_dqn(name)
    main.policy.learn.learner = dict(import_names=["tests.entry._plugins"],
                                     hook=dict(log_show_after_iter=100000, **hooks))
    return main, create


def test_plugin_hook_requests_stop_and_after_run_hooks_still_run(in_tmp_dir, cartpole_dqn):
    _plugins.CALLS.clear()
    stop = dict(name="stop", type="test_stop_at_iter", position="after_iter", priority=50, ext_args=dict(iter=37))
    after = dict(name="after", type="test_stop_at_iter", position="after_run", priority=50)
    serial_pipeline(_with_hooks(cartpole_dqn, "hookstop", stop=stop, after=after), seed=0)
    result = read_result("hookstop")
    assert result["train_iter"] == 37 and result["stop_flag"] is False
    assert _plugins.CALLS[-1] == "after_run:37"
    assert os.path.exists("hookstop/ckpt/iteration_37.pth.tar")  # save_ckpt_after_run ran too


def test_unknown_hook_type_suggests(in_tmp_dir, cartpole_dqn):
    bad = dict(name="x", type="test_stop_at_itr", position="after_iter", priority=50)
    with pytest.raises(RegistryError, match="(?s)test_stop_at_itr.*test_stop_at_iter"):
        serial_pipeline(_with_hooks(cartpole_dqn, "badtype", x=bad), seed=0)


def test_misspelled_hook_position(in_tmp_dir, cartpole_dqn):
    bad = dict(name="x", type="test_stop_at_iter", position="after_iteration", priority=50)
    with pytest.raises(ConfigError, match="unknown position 'after_iteration'.*after_iter"):
        serial_pipeline(_with_hooks(cartpole_dqn, "badpos", x=bad), seed=0)


def test_raising_hook_names_itself(in_tmp_dir, cartpole_dqn, monkeypatch):
    def boom(self, engine):
        raise ZeroDivisionError("plugin bug")

    monkeypatch.setattr(_plugins.SlowDownHook, "__call__", boom)
    slow = dict(name="my_slow_hook", type="test_slow_down", position="after_iter", priority=50)
    with pytest.raises(Exception, match="my_slow_hook.*after_iter") as info:
        serial_pipeline(_with_hooks(cartpole_dqn, "raising", slow=slow), seed=0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
