"""check_policy_fits_env: the policy's action-space kind and model shapes against the env's spaces, at set-up."""
from __future__ import annotations

import copy
from functools import partial

import gymnasium as gym
import pytest

from ding.envs import create_env_manager
from ding.model import DQN
from ding.policy import DQNPolicy, check_policy_fits_env
from ding.utils import ConfigError
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv
from dizoo.classic_control.pendulum.envs.pendulum_env import PendulumEnv

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[8])


def manager(env_cls):
    return create_env_manager(dict(type="base"), [partial(env_cls, {})])


def dqn(**model):
    cfg = dict(type="dqn", model=dict(MODEL, **model))
    return DQNPolicy(cfg, enable_field=["eval"])


def test_matching_spaces_pass():
    check_policy_fits_env(dqn(), manager(CartPoleEnv), "cartpole")
    check_policy_fits_env(dqn(obs_shape=[4], action_shape=[2]), manager(CartPoleEnv), "cartpole")


def test_dqn_on_a_continuous_action_space_is_refused():
    policy = dqn(obs_shape=3, action_shape=1)
    with pytest.raises(ConfigError, match=r"policy\.type: DQNPolicy \('dqn'\) needs a Discrete action space, but env "
                                          r"'pendulum' has Box\(-1\.0, 1\.0, \(1,\), float32\)\. Use a policy made "
                                          r"for this action space"):
        check_policy_fits_env(policy, manager(PendulumEnv), "pendulum")


@pytest.mark.parametrize("key,value,expects", [
    ("obs_shape", 5, r"policy\.model\.obs_shape: 5 does not match the observation space of env 'cartpole', "
                     r"Box\(.*\) \(expects 4\); set policy\.model\.obs_shape=4"),
    ("action_shape", 3, r"policy\.model\.action_shape: 3 does not match the action space of env 'cartpole', "
                        r"Discrete\(2\) \(expects 2\); set policy\.model\.action_shape=2"),
])
def test_model_shape_not_matching_the_env_names_the_key_and_the_fix(key, value, expects):
    with pytest.raises(ConfigError, match=expects):
        check_policy_fits_env(dqn(**{key: value}), manager(CartPoleEnv), "cartpole")


def test_both_shapes_wrong_are_reported_together():
    with pytest.raises(ConfigError) as info:
        check_policy_fits_env(dqn(obs_shape=6, action_shape=5), manager(CartPoleEnv))
    lines = str(info.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["policy.model.obs_shape", "policy.model.action_shape"]
    assert "space of the env," in lines[0]


def test_a_model_given_by_the_caller_is_checked_by_its_attributes():
    policy = DQNPolicy(dict(type="dqn"), model=DQN(obs_shape=5, action_shape=2), enable_field=["eval"])
    with pytest.raises(ConfigError, match=r"the model's obs_shape \(DQN\.obs_shape\): \(5,\) does not match"):
        check_policy_fits_env(policy, manager(CartPoleEnv), "cartpole")


def test_any_action_space_for_a_policy_that_declares_none():
    class AnySpaceDQN(DQNPolicy):
        action_space_types = None

    policy = AnySpaceDQN(dict(type="dqn", model=copy.deepcopy(MODEL)), enable_field=["eval"])
    env = manager(CartPoleEnv)
    env._spaces = (env.observation_space, gym.spaces.MultiBinary(2), None)  # no shape rule for MultiBinary
    check_policy_fits_env(policy, env)
