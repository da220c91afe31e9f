"""DI-engine's TD losses of the DQN variants: quantile (QR-DQN / IQN / FQF), C51 one-step and multi-agent,
Munchausen, BDQ, SQL, DQfD, per-sample gammas, and the shape helpers."""
from __future__ import annotations

import math

import pytest
import torch

from ding.rl_utils import (
    bdq_nstep_td_error,
    dist_1step_td_data,
    dist_1step_td_error,
    dist_nstep_td_data,
    dist_nstep_td_error,
    dqfd_nstep_td_data,
    dqfd_nstep_td_error,
    fqf_nstep_td_data,
    fqf_nstep_td_error,
    iqn_nstep_td_data,
    iqn_nstep_td_error,
    m_q_1step_td_data,
    m_q_1step_td_error,
    q_nstep_sql_td_error,
    q_nstep_td_data,
    q_nstep_td_error,
    qrdqn_nstep_td_data,
    qrdqn_nstep_td_error,
)
from ding.rl_utils.td import shape_fn_dntd, shape_fn_qntd, shape_fn_td_lambda
from ding.rl_utils.td_lambda import td_lambda_data
from ding.rl_utils.td_quantile import quantile_huber_per_sample


def test_quantile_loss_is_zero_at_the_target_and_asymmetric():
    tau = torch.tensor([0.1, 0.9])
    same = torch.tensor([[1.0, 1.0]])
    assert quantile_huber_per_sample(same, same, tau).item() == 0.0
    # a prediction below the target costs tau, above it 1 - tau (kappa=0: plain quantile loss)
    below = quantile_huber_per_sample(torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0]]), tau, kappa=0.0)
    assert below.item() == pytest.approx(0.1 + 0.9)
    low_tau = quantile_huber_per_sample(torch.tensor([[2.0]]), torch.tensor([[1.0]]), torch.tensor([0.1]), 0.0)
    assert low_tau.item() == pytest.approx(0.9)


def test_three_quantile_losses_agree_on_one_layout():
    torch.manual_seed(0)
    b, a, n = 3, 2, 4
    q = torch.randn(b, a, n)
    next_q = torch.randn(b, a, n)
    act, next_act = torch.randint(0, a, (b,)), torch.randint(0, a, (b,))
    reward, done = torch.rand(2, b), torch.zeros(b)
    tau = (torch.arange(n) + 0.5) / n
    qr, _ = qrdqn_nstep_td_error(qrdqn_nstep_td_data(q, next_q, act, next_act, reward, done, n, None), 0.9, 2)
    iqn_tau = tau.view(n, 1, 1).expand(n, b, 1)
    iqn, _ = iqn_nstep_td_error(iqn_nstep_td_data(q.permute(2, 0, 1), next_q.permute(2, 0, 1), act, next_act, reward,
                                                  done, iqn_tau, None), 0.9, 2)
    fqf, _ = fqf_nstep_td_error(fqf_nstep_td_data(q.transpose(1, 2), next_q.transpose(1, 2), act, next_act, reward,
                                                  done, tau.expand(b, n), None), 0.9, 2)
    assert qr.item() == pytest.approx(iqn.item()) == pytest.approx(fqf.item())


def test_dist_one_step_and_multi_agent_forms():
    torch.manual_seed(0)
    dist = torch.softmax(torch.randn(4, 2, 3, 11), -1)
    next_dist = torch.softmax(torch.randn(4, 2, 3, 11), -1)
    act, next_act = torch.randint(0, 3, (4, 2)), torch.randint(0, 3, (4, 2))
    reward, done = torch.randn(4), torch.zeros(4)
    team = dist_1step_td_error(dist_1step_td_data(dist, next_dist, act, next_act, reward, done, None), 0.9, -5, 5, 11)
    agents = [dist_nstep_td_error(dist_nstep_td_data(dist[:, i], next_dist[:, i], act[:, i], next_act[:, i],
                                                     reward.unsqueeze(0), done, None), 0.9, -5, 5, 11)[0]
              for i in range(2)]
    assert team.item() == pytest.approx(sum(agents).item() / 2, rel=1e-5)


def test_per_sample_gammas_match_a_shared_gamma():
    q, next_q = torch.randn(3, 2), torch.randn(3, 2)
    act, reward, done = torch.tensor([0, 1, 0]), torch.rand(2, 3), torch.zeros(3)
    data = q_nstep_td_data(q, next_q, act, act, reward, done, None)
    shared, _ = q_nstep_td_error(data, 0.9, nstep=2)
    listed, _ = q_nstep_td_error(data, [torch.tensor(0.9)] * 3, nstep=2)
    assert shared.item() == pytest.approx(listed.item())


def test_munchausen_target_and_statistics():
    q = torch.zeros(2, 2, requires_grad=True)
    current = torch.tensor([[1.0, 0.0], [0.0, 3.0]])
    nxt = torch.zeros(2, 2)
    data = m_q_1step_td_data(q, current, nxt, torch.tensor([0, 0]), torch.zeros(2), torch.ones(2), None)
    loss, td, gap, clip = m_q_1step_td_error(data, 0.99, tau=1.0, alpha=0.5)
    log_pi = torch.log_softmax(current, -1)[:, 0]
    expected = 0.5 * log_pi.clamp(-1.0, 0.0)  # done: no bootstrap
    assert torch.allclose(td, expected.abs())
    assert gap.item() == pytest.approx(2.0) and clip.item() == pytest.approx(0.5)  # sample 2: log pi = -3.05
    loss.backward()
    assert q.grad is not None


def test_bdq_sql_dqfd_targets():
    q = torch.zeros(1, 2, 3)
    next_q = torch.ones(1, 2, 3)
    data = q_nstep_td_data(q, next_q, torch.tensor([[0, 1]]), torch.tensor([[2, 2]]), torch.ones(1, 1),
                           torch.zeros(1), None)
    _, per_sample = bdq_nstep_td_error(data, 0.5)
    assert per_sample.item() == pytest.approx(1.5 ** 2)  # target 1 + 0.5 * 1 in both branches
    flat = q_nstep_td_data(torch.zeros(1, 2), torch.zeros(1, 2), torch.tensor([0]), torch.tensor([0]),
                           torch.zeros(1, 1), torch.zeros(1), None)
    _, _, target_v = q_nstep_sql_td_error(flat, 0.9, alpha=1.0)
    assert target_v.item() == pytest.approx(math.log(2.0))  # logsumexp of two zeros
    q_e = torch.tensor([[1.0, 0.5]], requires_grad=True)
    dq = dqfd_nstep_td_data(q_e, torch.zeros(1, 2), torch.tensor([1]), torch.tensor([0]), torch.zeros(1, 1),
                            torch.ones(1), torch.ones(1), None, torch.zeros(1, 2), torch.tensor([0]), torch.ones(1))
    loss, _, parts = dqfd_nstep_td_error(dq, 0.9, 1.0, 1.0, margin_function=0.8, nstep=1)
    assert parts[2].item() == pytest.approx(1.0 + 0.8 - 0.5)  # the expert's action scores below a margin-ed other
    loss.backward()
    assert q_e.grad is not None


def test_shape_helpers_read_positional_and_keyword_calls():
    q = torch.zeros(4, 3)
    data = q_nstep_td_data(q, q, torch.zeros(4), torch.zeros(4), torch.zeros(5, 4), torch.zeros(4), None)
    assert shape_fn_qntd([data, 0.9, 5], {}) == shape_fn_qntd([], {"data": data}) == [5, 4, 3]
    dist = dist_nstep_td_data(torch.zeros(4, 3, 7), None, None, None, torch.zeros(2, 4), None, None)
    assert shape_fn_dntd([dist, 0.9, -1, 1, 7, 2], {}) == [2, 4, 3, 7]
    lam = td_lambda_data(torch.zeros(6, 2), torch.zeros(5, 2), None)
    assert shape_fn_td_lambda([], {"data": lam}) == 5 and shape_fn_td_lambda([lam], {}) == (5, 2)
    with pytest.raises(KeyError, match="no 'data'"):
        shape_fn_qntd([], {})
