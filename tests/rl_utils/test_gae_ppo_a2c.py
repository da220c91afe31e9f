"""GAE, the PPO clip loss and the A2C loss against small examples computed by hand."""
from __future__ import annotations

import math

import pytest
import torch

from ding.rl_utils import a2c_data, a2c_error, gae, gae_data, ppo_data, ppo_error, ppo_policy_loss

T = torch.tensor


def _gae(value, next_value, reward, done, traj_flag, gamma=0.5, lambda_=0.5):
    return gae(gae_data(T(value), T(next_value), T(reward), T(done), T(traj_flag)), gamma, lambda_)


def test_gae_of_an_episode_that_terminates():
    # gamma = lambda = 0.5: delta_2 = 1 - 3 = -2; delta_1 = 1 + 0.5*3 - 2 = 0.5; delta_0 = 1 + 0.5*2 - 1 = 1
    # A_2 = -2; A_1 = 0.5 + 0.25 * -2 = 0; A_0 = 1 + 0.25 * 0 = 1
    adv = _gae([1., 2., 3.], [2., 3., 4.], [1., 1., 1.], [False, False, True], [False, False, True])
    assert torch.allclose(adv, T([1.0, 0.0, -2.0]))


def test_gae_bootstraps_a_time_limit_cut_from_the_final_observation():
    # same steps, but the episode was truncated after step 2 (done=False, traj_flag=True): delta_2 = 1 + 0.5*4 - 3 = 0
    # A_2 = 0; A_1 = 0.5; A_0 = 1 + 0.25 * 0.5 = 1.125
    adv = _gae([1., 2., 3.], [2., 3., 4.], [1., 1., 1.], [False, False, False], [False, False, True])
    assert torch.allclose(adv, T([1.125, 0.5, 0.0]))


def test_gae_does_not_carry_across_segments():
    first = [1., 2., 3.], [2., 3., 4.], [1., 1., 1.], [False, False, True], [False, False, True]
    second = [5., 6.], [6., 7.], [0., 2.], [False, False], [False, True]
    both = _gae(*[a + b for a, b in zip(first, second)])
    assert torch.allclose(both, torch.cat([_gae(*first), _gae(*second)]))
    # (T, B) layout: rows are time, columns independent envs
    cols = gae(gae_data(T([[1., 5.], [2., 6.]]), T([[2., 6.], [3., 7.]]), T([[1., 0.], [1., 2.]]),
                        T([[False, False], [False, False]]), T([[False, False], [True, True]])), 0.5, 0.5)
    assert torch.allclose(cols[:, 1], _gae(*second))


def _logits(p):  # logits of a 2-action distribution with P(action 0) = p
    return [math.log(p), math.log(1 - p)]


def test_gae_per_agent_values_share_the_team_reward_and_done():
    """DI-engine's multi-agent form: value (T, B, A), reward and done (T, B); each agent's column is the GAE of its
    own values with the team's reward."""
    T, B, A = 6, 2, 3
    g = torch.Generator().manual_seed(0)
    value, next_value = torch.randn(T, B, A, generator=g), torch.randn(T, B, A, generator=g)
    reward = torch.randn(T, B, generator=g)
    done = torch.zeros(T, B)
    done[2, 1] = 1.0
    adv = gae(gae_data(value, next_value, reward, done, None), gamma=0.9, lambda_=0.8)
    assert adv.shape == (T, B, A)
    for a in range(A):
        one = gae(gae_data(value[..., a], next_value[..., a], reward, done, None), gamma=0.9, lambda_=0.8)
        assert torch.allclose(adv[..., a], one)


def test_ppo_clip_loss_by_hand():
    """Sample 0: ratio 0.75/0.5 = 1.5, adv +1 -> clipped to 1.2. Sample 1: ratio 0.25/0.5 = 0.5, adv -1 ->
    min(-0.5, 0.8 * -1) = -0.8. policy_loss = -mean(1.2, -0.8) = -0.2; both ratios left [0.8, 1.2]."""
    logit_new = T([_logits(0.75), _logits(0.25)], requires_grad=True)
    logit_old = T([_logits(0.5), _logits(0.5)])
    action, adv = T([0, 0]), T([1.0, -1.0])
    value_new, value_old, ret = T([0.5, -0.1]), T([0.0, 0.0]), T([1.0, 1.0])
    loss, info = ppo_error(ppo_data(logit_new, logit_old, action, value_new, value_old, adv, ret, None), 0.2)
    assert loss.policy_loss.item() == pytest.approx(-0.2)
    assert info.clipfrac == 1.0
    assert info.approx_kl == pytest.approx((math.log(0.5 / 0.75) + math.log(0.5 / 0.25)) / 2)
    # value: sample 0 may only move 0.2 from 0 -> max((0.5-1)^2, (0.2-1)^2) = 0.64; sample 1: 1.21 -> 0.5*mean
    assert loss.value_loss.item() == pytest.approx(0.5 * (0.64 + 1.21) / 2)
    entropy = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert loss.entropy_loss.item() == pytest.approx(entropy)
    # the clipped samples give the policy no gradient
    loss.policy_loss.backward()
    assert torch.count_nonzero(logit_new.grad) == 0
    unclipped, _ = ppo_error(ppo_data(logit_new, logit_old, action, value_new, value_old, adv, ret, None), 0.2,
                             use_value_clip=False)
    assert unclipped.value_loss.item() == pytest.approx(0.5 * (0.25 + 1.21) / 2)


def test_ppo_clip_loss_inside_the_trust_region_and_dual_clip():
    # ratio 1.1 with adv 2 is not clipped: -(1.1 * 2)
    logp_old = torch.log(T([0.5]))
    assert ppo_policy_loss(torch.log(T([0.55])), logp_old, T([2.0]), 0.2).item() == pytest.approx(-2.2)
    # ratio 4 with adv -1: min(-4, -1.2) = -4, the dual clip (3) bounds it at -3 -> loss 3
    assert ppo_policy_loss(torch.log(T([2.0])), logp_old, T([-1.0]), 0.2).item() == pytest.approx(4.0)
    assert ppo_policy_loss(torch.log(T([2.0])), logp_old, T([-1.0]), 0.2, dual_clip=3.0).item() == pytest.approx(3.0)


def test_ppo_gaussian_log_prob_sums_action_dims():
    mu, sigma = torch.zeros(1, 2), torch.ones(1, 2)
    logit_old = {"mu": mu, "sigma": sigma}
    logit_new = {"mu": mu + 0.1, "sigma": sigma}
    action = T([[0.5, -0.5]])
    loss, info = ppo_error(ppo_data(logit_new, logit_old, action, T([0.]), T([0.]), T([1.0]), T([0.]), None), 0.2)
    # log N(a; mu+0.1, 1) - log N(a; mu, 1) summed over dims = sum(a * 0.1 - 0.005) = -0.01 -> ratio exp(-0.01)
    assert loss.policy_loss.item() == pytest.approx(-math.exp(-0.01))
    assert loss.entropy_loss.item() == pytest.approx(2 * 0.5 * math.log(2 * math.pi * math.e))


def test_a2c_loss_by_hand():
    logit = T([_logits(0.25), _logits(0.5)])
    loss = a2c_error(a2c_data(logit, T([0, 1]), T([1.0, 2.0]), T([2.0, -1.0]), T([3.0, 2.0]), None))
    # -(log 0.25 * 2 + log 0.5 * -1) / 2; ((3-1)^2 + 0) / 2
    assert loss.policy_loss.item() == pytest.approx(-(math.log(0.25) * 2 - math.log(0.5)) / 2)
    assert loss.value_loss.item() == pytest.approx(2.0)


def test_ppo_errors():
    with pytest.raises(ValueError, match="dual_clip must be > 1"):
        ppo_error(ppo_data(T([[0., 0.]]), T([[0., 0.]]), T([0]), T([0.]), T([0.]), T([1.]), T([0.]), None), 0.2,
                  dual_clip=0.5)
    with pytest.raises(TypeError, match="expected \\(B, A\\) logits or a dict with 'mu' and 'sigma'"):
        ppo_error(ppo_data({"mean": 0}, T([[0., 0.]]), T([0]), T([0.]), T([0.]), T([1.]), T([0.]), None))
