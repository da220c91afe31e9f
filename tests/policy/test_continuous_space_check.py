"""SAC / DDPG / TD3 against the env's spaces: a Discrete env, a wrong action shape, unscaled Box bounds."""
from __future__ import annotations

from functools import partial

import pytest

from ding.envs import create_env_manager, scale_action
from ding.policy import check_policy_fits_env, create_policy
from ding.utils import ConfigError
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv
from dizoo.classic_control.pendulum.envs.pendulum_env import PendulumEnv


def manager(env_cls, **cfg):
    return create_env_manager(dict(type="base"), [partial(env_cls, cfg)])


def policy(type_, **model):
    return create_policy(dict(type=type_, model=dict(dict(obs_shape=3, action_shape=1), **model)),
                         enable_field=["eval"])


@pytest.mark.parametrize("type_,cls", [("sac", "SACPolicy"), ("ddpg", "DDPGPolicy"), ("td3", "TD3Policy")])
def test_a_discrete_action_space_is_refused(type_, cls):
    with pytest.raises(ConfigError, match=rf"policy\.type: {cls} \('{type_}'\) needs a Box action space, but env "
                                          r"'cartpole' has Discrete\(2\)\. Use a policy made for this action space"):
        check_policy_fits_env(policy(type_, obs_shape=4, action_shape=2), manager(CartPoleEnv), "cartpole")


@pytest.mark.parametrize("type_", ["sac", "ddpg", "td3"])
def test_pendulum_fits(type_):
    check_policy_fits_env(policy(type_), manager(PendulumEnv), "pendulum")


def test_an_action_shape_that_does_not_match_the_env_names_the_key_and_the_fix():
    with pytest.raises(ConfigError, match=r"policy\.model\.action_shape: 2 does not match the action space of env "
                                          r"'pendulum', Box\(-1\.0, 1\.0, \(1,\), float32\) \(expects 1\); set "
                                          r"policy\.model\.action_shape=1"):
        check_policy_fits_env(policy("sac", action_shape=2), manager(PendulumEnv), "pendulum")


def test_unscaled_bounds_are_refused_with_the_fix():
    """Without act_scale Pendulum's Box is [-2, 2]: a tanh actor would never use half the torque range."""
    with pytest.raises(ConfigError, match=r"policy\.type: TD3Policy \('td3'\) acts in \[-1, 1\], but env 'pendulum' "
                                          r"has Box\(-2\.0, 2\.0, \(1,\), float32\) .*Set env\.act_scale=True"):
        check_policy_fits_env(policy("td3"), manager(PendulumEnv, act_scale=False), "pendulum")


def test_scale_action_maps_the_unit_interval_onto_the_bounds():
    import numpy as np

    low, high = np.array([-2.0, 0.0]), np.array([2.0, 10.0])
    out = scale_action(np.array([[-1.0, -1.0], [0.0, 0.5], [1.0, 3.0]]), low, high)
    assert out.tolist() == [[-2.0, 0.0], [0.0, 7.5], [2.0, 10.0]]  # clipped to [-1, 1] first
