"""Issue #22 item 7: a failed set-up leaves no half-made run directory, so the corrected run gets ./<exp_name>/."""
from __future__ import annotations

import os

import pytest

import ding
from ding.utils import DingError


def test_failed_setup_removes_the_directory_it_claimed(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn("setup_run")
    main.policy.learn.learner.hook["bad"] = dict(type="log_show", position="after_iteration")
    with pytest.raises(DingError) as info:
        ding.Trainer((main, create), max_train_iter=5)
    assert "after_iteration" in str(info.value)
    assert not os.path.exists("setup_run")  # no total_config.py, no logs left behind
    main, create = cartpole_dqn("setup_run")
    with ding.Trainer((main, create), max_train_iter=5) as trainer:
        trainer.run()
        assert trainer.exp_dir == "setup_run"  # not redirected to setup_run_<timestamp>
    assert os.listdir(".") == ["setup_run"]


def test_failed_setup_keeps_an_earlier_run(in_tmp_dir, cartpole_dqn):
    main, create = cartpole_dqn("setup_run")
    with ding.Trainer((main, create), max_train_iter=5) as trainer:
        trainer.run()
    main, create = cartpole_dqn("setup_run")
    main.policy.learn.learner.hook["bad"] = dict(type="log_show", position="after_iteration")
    with pytest.raises(DingError):
        ding.Trainer((main, create), max_train_iter=5)
    assert os.listdir(".") == ["setup_run"]  # the failed run's redirected directory is gone, the earlier run stays
    assert os.path.isfile(os.path.join("setup_run", "result"))
