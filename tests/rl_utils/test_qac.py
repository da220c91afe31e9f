"""Targets and losses of DDPG / TD3 / SAC against small hand-computed examples."""
import math

import pytest
import torch

from ding.rl_utils import (
    critic_loss,
    min_q,
    qac_td_target,
    sac_temperature_loss,
    squashed_gaussian_mode,
    squashed_gaussian_sample,
    target_policy_smoothing,
)


def test_twin_q_target_takes_the_min_and_subtracts_the_entropy_term():
    # min(Q1', Q2') = [1.5, 3.0]; soft value = min - alpha * log_prob = [1.5 + 0.2, 3.0 - 0.1] = [1.7, 2.9]
    # target = r + gamma * (1 - done) * soft value = [1 + 0.9 * 1.7, 0.5 + 0 (terminated)] = [2.53, 0.5]
    target = qac_td_target(
        reward=torch.tensor([1.0, 0.5]),
        next_q=[torch.tensor([2.0, 3.0]), torch.tensor([1.5, 4.0])],
        done=torch.tensor([0.0, 1.0]),
        gamma=0.9,
        next_log_prob=torch.tensor([-1.0, 0.5]),
        alpha=0.2,
    )
    assert target.tolist() == pytest.approx([2.53, 0.5], abs=1e-6)
    assert not target.requires_grad


def test_single_critic_target_without_entropy_is_plain_td():
    target = qac_td_target(torch.tensor([1.0]), torch.tensor([10.0]), torch.tensor([0.0]), gamma=0.5)
    assert target.tolist() == pytest.approx([6.0])


def test_nstep_target_and_value_gamma_from_a_time_limit():
    # rewards (nstep=2, B=2): returns [1 + .9 * 2, 0.5 + .9 * 0] = [2.8, 0.5]; the second window was cut to one step
    # by a time limit, so it bootstraps with gamma^1 = 0.9 instead of gamma^2 = 0.81.
    reward = torch.tensor([[1.0, 0.5], [2.0, 0.0]])
    target = qac_td_target(reward, torch.tensor([10.0, 10.0]), torch.tensor([0.0, 0.0]), gamma=0.9, nstep=2,
                           value_gamma=torch.tensor([0.81, 0.9]))
    assert target.tolist() == pytest.approx([2.8 + 8.1, 0.5 + 9.0], abs=1e-5)


def test_min_q_of_one_or_several_critics():
    a, b = torch.tensor([1.0, 5.0]), torch.tensor([2.0, 4.0])
    assert min_q([a, b]).tolist() == [1.0, 4.0]
    assert min_q(a) is a


def test_critic_loss_sums_the_critics_and_weights_samples():
    target = torch.tensor([1.0, 2.0])
    q1 = torch.tensor([0.0, 2.0], requires_grad=True)
    q2 = torch.tensor([1.0, 0.0], requires_grad=True)
    # errors: critic 1 [1, 0], critic 2 [0, 2] -> mean sq: 0.5 + 2.0
    loss, td = critic_loss([q1, q2], target)
    assert loss.item() == pytest.approx(2.5) and td.tolist() == pytest.approx([0.5, 1.0])
    # weights [2, 0]: per sample (1 + 0) * 2 and (0 + 4) * 0 -> mean 1.0
    loss_w, _ = critic_loss([q1, q2], target, weight=torch.tensor([2.0, 0.0]))
    assert loss_w.item() == pytest.approx(1.0)
    loss.backward()
    assert q1.grad.tolist() == pytest.approx([-1.0, 0.0])


def test_td3_target_smoothing_clips_the_noise_then_the_action(monkeypatch):
    noise = torch.tensor([[3.0], [-0.1], [0.0], [-5.0]])
    monkeypatch.setattr(torch, "randn_like", lambda x: noise.clone())
    action = torch.tensor([[0.9], [0.0], [-1.0], [0.2]])
    # noise * sigma = [0.6, -0.02, 0, -1.0] -> clipped to [-0.5, 0.5]: [0.5, -0.02, 0, -0.5]
    # action + noise = [1.4, -0.02, -1.0, -0.3] -> clipped to [-1, 1]: [1.0, -0.02, -1.0, -0.3]
    smoothed = target_policy_smoothing(action, sigma=0.2, noise_min=-0.5, noise_max=0.5)
    assert smoothed.flatten().tolist() == pytest.approx([1.0, -0.02, -1.0, -0.3], abs=1e-6)


def test_target_smoothing_noise_has_the_asked_spread():
    torch.manual_seed(0)
    out = target_policy_smoothing(torch.zeros(20000, 1), sigma=0.1, noise_min=-0.5, noise_max=0.5)
    assert out.std().item() == pytest.approx(0.1, rel=0.05) and out.abs().max() <= 0.5


def test_squashed_gaussian_log_prob_by_hand(monkeypatch):
    # eps = [0, 1]: u = mu + sigma * eps = [0, 1]; a = tanh(u)
    monkeypatch.setattr(torch, "randn_like", lambda x: torch.tensor([[0.0, 1.0]]))
    mu, sigma = torch.tensor([[0.0, 0.5]]), torch.tensor([[1.0, 0.5]])
    action, log_prob = squashed_gaussian_sample(mu, sigma)
    assert action.tolist()[0] == pytest.approx([0.0, math.tanh(1.0)])
    # dim 0: log N(0; 0, 1) - log(1 - tanh(0)^2) = -0.5 log(2 pi)
    # dim 1: log N(1; 0.5, 0.5) = -0.5 - log(0.5) - 0.5 log(2 pi); minus log(1 - tanh(1)^2)
    expected = (-0.5 * math.log(2 * math.pi)) + (-0.5 - math.log(0.5) - 0.5 * math.log(2 * math.pi)
                                                 - math.log(1 - math.tanh(1.0) ** 2))
    assert log_prob.item() == pytest.approx(expected, abs=1e-5)


def test_squashed_gaussian_matches_torch_distributions_and_stays_finite():
    from torch.distributions import Normal, TransformedDistribution
    from torch.distributions.transforms import TanhTransform

    torch.manual_seed(1)
    mu, sigma = torch.randn(64, 3), torch.rand(64, 3) + 0.1
    action, log_prob = squashed_gaussian_sample(mu, sigma)
    reference = TransformedDistribution(Normal(mu, sigma), TanhTransform()).log_prob(action.clamp(-0.999, 0.999))
    inside = action.abs().max(dim=1).values < 0.999
    assert torch.allclose(log_prob[inside], reference.sum(-1)[inside], atol=1e-3)
    # a saturated sample (u = 30) still has a finite log-density
    _, far = squashed_gaussian_sample(torch.tensor([[30.0]]), torch.tensor([[1e-3]]))
    assert torch.isfinite(far).all()
    assert squashed_gaussian_mode(torch.tensor([0.5])).item() == pytest.approx(math.tanh(0.5))


def test_squashed_gaussian_sample_is_reparameterised():
    mu = torch.zeros(4, 2, requires_grad=True)
    sigma = torch.ones(4, 2, requires_grad=True)
    action, log_prob = squashed_gaussian_sample(mu, sigma)
    (action.sum() + log_prob.sum()).backward()
    assert mu.grad is not None and sigma.grad is not None and mu.grad.abs().sum() > 0


def test_sac_temperature_loss_and_its_gradient_step_by_hand():
    # log_prob + target_entropy = [-0.5 - 1, 1.5 - 1] = [-1.5, 0.5], mean -0.5 -> loss = 0.5 * log_alpha
    log_alpha = torch.tensor([math.log(0.2)], requires_grad=True)
    loss = sac_temperature_loss(log_alpha, torch.tensor([-0.5, 1.5]), target_entropy=-1.0)
    assert loss.item() == pytest.approx(0.5 * math.log(0.2))
    loss.backward()
    assert log_alpha.grad.item() == pytest.approx(0.5)
    # The policy's entropy estimate (-mean log_prob = -0.5) is above the target (-1): a gradient step lowers alpha.
    with torch.no_grad():
        log_alpha -= 0.1 * log_alpha.grad
    assert log_alpha.exp().item() == pytest.approx(0.2 * math.exp(-0.05))


def test_sac_temperature_rises_when_entropy_is_below_target():
    log_alpha = torch.zeros(1, requires_grad=True)
    sac_temperature_loss(log_alpha, torch.tensor([2.0, 2.0]), target_entropy=-1.0).backward()
    assert log_alpha.grad.item() == pytest.approx(-1.0)  # descent raises log_alpha
