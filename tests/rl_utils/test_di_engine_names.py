"""DI-engine's ``ding.rl_utils`` names: TD(lambda), symlog, PPO's shape hint, the noise generators."""
from __future__ import annotations

import pytest
import torch

from ding.rl_utils import (
    create_noise_generator,
    inv_symlog,
    ppo_data,
    shape_fn_ppo,
    symlog,
    td_lambda_data,
    td_lambda_error,
)
from ding.rl_utils.td import generalized_lambda_returns


def test_lambda_returns_by_hand():
    value = torch.tensor([[1.0], [2.0], [3.0]])  # V_0..V_2 for a 2-step slice
    reward = torch.tensor([[1.0], [0.5]])
    gamma, lam = 0.9, 0.8
    g1 = 0.5 + gamma * 3.0
    g0 = 1.0 + gamma * ((1 - lam) * 2.0 + lam * g1)
    returns = generalized_lambda_returns(value, reward, gamma, lam)
    assert returns.flatten().tolist() == pytest.approx([g0, g1])
    done = torch.tensor([[0.0], [1.0]])
    assert generalized_lambda_returns(value, reward, gamma, lam, done)[1].item() == pytest.approx(0.5)


def test_td_lambda_error_is_half_the_weighted_squared_error_and_trains_the_value():
    value = torch.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    reward = torch.tensor([[1.0], [0.5]])
    loss = td_lambda_error(td_lambda_data(value, reward, None), gamma=0.9, lambda_=0.8)
    ret = generalized_lambda_returns(value.detach(), reward, 0.9, 0.8)
    assert loss.item() == pytest.approx(0.5 * ((ret - value.detach()[:-1]) ** 2).mean().item())
    loss.backward()
    assert value.grad[-1].item() == 0.0 and value.grad[0].item() != 0.0  # V_T only bootstraps
    weighted = td_lambda_error(td_lambda_data(value.detach(), reward, torch.tensor([[0.0], [0.0]])))
    assert weighted.item() == 0.0


def test_symlog_and_its_inverse():
    x = torch.tensor([-100.0, -1.0, 0.0, 0.5, 1e4])
    assert torch.allclose(inv_symlog(symlog(x)), x, rtol=1e-5)
    assert symlog(torch.tensor([1.0])).item() == pytest.approx(torch.log(torch.tensor(2.0)).item())


def test_shape_fn_ppo_reads_logit_new():
    data = ppo_data(torch.zeros(4, 3), torch.zeros(4, 3), torch.zeros(4), None, None, None, None, None)
    assert shape_fn_ppo((data,), {}) == (4, 3) and shape_fn_ppo((), {"data": data}) == (4, 3)


def test_noise_generators():
    torch.manual_seed(0)
    gauss = create_noise_generator("gauss", {"mu": 1.0, "sigma": 0.0})
    assert torch.equal(gauss((2, 3), "cpu"), torch.ones(2, 3))
    x0 = torch.rand(2, 3)
    ou = create_noise_generator("ou", {"mu": 0.1, "sigma": 1.0, "theta": 2.0, "x0": x0})
    first, second = ou((2, 3), "cpu"), ou((2, 3), "cpu")
    assert first.shape == (2, 3) and not torch.equal(first, second) and torch.equal(ou.x0, x0)
    ou.x0 = x0 + 0.05  # a new start restarts the process there
    assert torch.allclose(ou._x, x0 + 0.05)
    with pytest.raises(KeyError, match="unknown noise type 'pink'"):
        create_noise_generator("pink", {})
