import copy

import pytest


@pytest.fixture
def cartpole_dqn():
    """A fresh ``(main_config, create_config)`` of the shipped CartPole DQN config; quiet learner log."""

    def make(exp_name: str = "cartpole_dqn_test", **learner_hooks):
        from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

        main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
        main.exp_name = exp_name
        hook = dict(log_show_after_iter=100000)
        hook.update(learner_hooks)
        main.policy.learn.learner = dict(hook=hook)
        return main, create

    return make


def read_result(exp_dir):
    import json
    import os

    with open(os.path.join(exp_dir, "result")) as f:
        return json.load(f)
