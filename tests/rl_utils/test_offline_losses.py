"""The offline regularisers against hand computations."""
from __future__ import annotations

import math

import pytest
import torch

from ding.rl_utils import advantage_weights, cql_penalty, discrete_cql_penalty, expectile_loss, td3_bc_lambda


def test_cql_penalty_is_the_importance_sampled_logsumexp_minus_the_data_q():
    q_data = torch.tensor([1.0, -2.0])
    q_rand = torch.tensor([[0.5, 1.5], [0.0, -1.0]])
    q_curr = torch.tensor([[2.0, 0.0], [1.0, 1.0]])
    q_next = torch.tensor([[1.0, 1.0], [-0.5, 0.5]])
    logp_curr = torch.tensor([[-1.0, -0.5], [0.2, 0.1]])
    logp_next = torch.tensor([[0.0, -2.0], [-1.0, 0.0]])
    log_u = 2 * math.log(0.5)  # two action dimensions: density of U[-1, 1]^2 is 1/4
    want = []
    for b in range(2):
        terms = ([q_rand[b, j].item() - log_u for j in range(2)] + [q_next[b, j].item() - logp_next[b, j].item()
                                                                     for j in range(2)]
                 + [q_curr[b, j].item() - logp_curr[b, j].item() for j in range(2)])
        want.append(math.log(sum(math.exp(t) for t in terms)))
    expected = sum(want) / 2 - q_data.mean().item()
    got = cql_penalty(q_data, q_rand, q_curr, q_next, logp_curr, logp_next, action_dim=2)
    assert got.item() == pytest.approx(expected, rel=1e-6)


def test_discrete_cql_penalty():
    q = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    action = torch.tensor([2, 0])
    row0 = math.log(math.e ** 1 + math.e ** 2 + math.e ** 3) - 3.0
    row1 = math.log(3.0) - 0.0
    assert discrete_cql_penalty(q, action).item() == pytest.approx((row0 + row1) / 2, rel=1e-6)


def test_td3_bc_lambda_is_alpha_over_mean_abs_q_without_gradient():
    q = torch.tensor([-4.0, 2.0, 6.0], requires_grad=True)
    lam = td3_bc_lambda(q, alpha=2.5)
    assert lam.item() == pytest.approx(2.5 / 4.0)
    assert not lam.requires_grad


def test_expectile_loss_weights_negative_and_positive_errors_asymmetrically():
    diff = torch.tensor([2.0, -1.0, 0.5])
    tau = 0.7
    expected = (0.7 * 4.0 + 0.3 * 1.0 + 0.7 * 0.25) / 3
    assert expectile_loss(diff, tau).item() == pytest.approx(expected)
    # tau = 0.5 is half the mean squared error
    assert expectile_loss(diff, 0.5).item() == pytest.approx(0.5 * diff.pow(2).mean().item())


def test_advantage_weights_are_capped_exponentials():
    w = advantage_weights(torch.tensor([0.0, 1.0, 10.0]), beta=2.0, max_weight=100.0)
    assert w.tolist() == pytest.approx([1.0, math.exp(2.0), 100.0])
