import pytest
import torch

from ding.rl_utils import nstep_return, q_nstep_td_data, q_nstep_td_error


def _data(weight=None, done=(False, True)):
    q = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    next_q = torch.tensor([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    action = torch.tensor([1, 0])
    next_action = torch.tensor([0, 1])
    reward = torch.tensor([[1.0, 2.0], [0.5, 1.0]])  # (nstep=2, B=2)
    return q_nstep_td_data(q, next_q, action, next_action, reward, torch.tensor(done), weight)


def test_two_step_td_error_by_hand():
    # q(s,a) = [2, 3]; next value at next_action = [5, 8]; returns = [1 + .9*.5, 2 + .9*1] = [1.45, 2.9]
    # targets = [1.45 + .81*5, 2.9 (done)] = [5.5, 2.9]; td = [3.5, -0.1]
    data = _data()
    loss, td = q_nstep_td_error(data, gamma=0.9, nstep=2)
    assert td.tolist() == pytest.approx([3.5, -0.1], abs=1e-5)
    assert loss.item() == pytest.approx((3.5**2 + 0.1**2) / 2, rel=1e-5)
    loss.backward()
    assert data.q.grad is not None and data.next_n_q.grad is None  # the target is not differentiated


def test_weights_scale_per_sample_loss():
    loss, _ = q_nstep_td_error(_data(weight=torch.tensor([1.0, 0.0])), gamma=0.9, nstep=2)
    assert loss.item() == pytest.approx(3.5**2 / 2, rel=1e-5)


def test_value_gamma_overrides_bootstrap_discount():
    # A window cut to 1 step by a time limit bootstraps with gamma^1 instead of gamma^2.
    value_gamma = torch.tensor([0.9, 0.81])
    _, td = q_nstep_td_error(_data(done=(False, False)), 0.9, 2, value_gamma=value_gamma)
    assert td.tolist() == pytest.approx([1.45 + 0.9 * 5 - 2, 2.9 + 0.81 * 8 - 3], abs=1e-5)


def test_one_step_accepts_flat_reward_and_cum_reward():
    q = torch.tensor([[1.0, 0.0]])
    data = q_nstep_td_data(q, torch.tensor([[2.0, 0.0]]), torch.tensor([0]), torch.tensor([0]), torch.tensor([1.0]),
                           torch.tensor([False]), None)
    _, td = q_nstep_td_error(data, 0.5)
    assert td.item() == pytest.approx(1.0 + 0.5 * 2.0 - 1.0)
    _, td_cum = q_nstep_td_error(data, 0.5, nstep=3, cum_reward=True)
    assert td_cum.item() == pytest.approx(1.0 + 0.125 * 2.0 - 1.0)


def test_custom_criterion():
    loss, _ = q_nstep_td_error(_data(), 0.9, 2, criterion=lambda p, t: (p - t).abs())
    assert loss.item() == pytest.approx((3.5 + 0.1) / 2, rel=1e-5)


def test_reward_steps_must_match_nstep():
    with pytest.raises(ValueError, match=r"reward has 2 steps .* but nstep=3"):
        q_nstep_td_error(_data(), 0.9, nstep=3)


def test_nstep_return():
    r = torch.tensor([[1.0], [1.0], [1.0]])
    assert nstep_return(r, 0.5, 3).tolist() == [1.75]


# ---------------------------------------------------------------- sequences (R2D2)
def test_sequence_windows_stop_at_termination_and_at_the_last_valid_step():
    from ding.rl_utils import sequence_nstep_windows

    reward = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    ret, steps, term = sequence_nstep_windows(reward, torch.tensor([[False, False, True, False]]),
                                              torch.ones(1, 4, dtype=torch.bool), 0.5, 3)
    assert ret.tolist() == [[2.75, 3.5, 3.0, 4.0]]  # 1 + 0.5*2 + 0.25*3; 2 + 0.5*3; 3; 4
    assert steps.tolist() == [[3, 2, 1, 1]]
    assert term.tolist() == [[True, True, True, False]]
    ret, steps, term = sequence_nstep_windows(reward, torch.zeros(1, 4, dtype=torch.bool),
                                              torch.tensor([[True, True, True, False]]), 0.5, 3)
    assert ret.tolist() == [[2.75, 3.5, 3.0, 0.0]] and steps.tolist() == [[3, 2, 1, 0]]
    assert not term.any()


def test_sequence_td_error_on_a_hand_computed_example():
    from ding.rl_utils import q_nstep_sequence_td_error

    q = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]], requires_grad=True)
    boot = torch.tensor([[0.0, 10.0, 20.0]])  # value of positions 0, 1, 2 (2 = next_obs of the last step)
    args = (q, boot, torch.tensor([[0, 1]]), torch.tensor([[1.0, 1.0]]), torch.zeros(1, 2, dtype=torch.bool),
            torch.ones(1, 2, dtype=torch.bool), 0.5, 2)
    loss, td = q_nstep_sequence_td_error(*args, value_rescale=False)
    # t=0: 1 + 0.5*1 + 0.25*20 = 6.5 vs 1; t=1: window cut at the sequence end: 1 + 0.5*20 = 11 vs 4
    assert td.tolist() == [[5.5, 7.0]]
    assert loss.item() == pytest.approx((5.5 ** 2 + 7.0 ** 2) / 2)
    loss.backward()
    assert q.grad is not None and q.grad[0, 0, 1] == 0  # only the taken actions get gradient

    from ding.rl_utils import value_inv_transform, value_transform

    _, td = q_nstep_sequence_td_error(*args, value_rescale=True, weight=torch.tensor([2.0]))
    expected0 = value_transform(1.5 + 0.25 * value_inv_transform(torch.tensor(20.0))) - 1
    expected1 = value_transform(1.0 + 0.5 * value_inv_transform(torch.tensor(20.0))) - 4
    assert torch.allclose(td, torch.stack([expected0, expected1]).view(1, 2))


def test_sequence_td_error_ignores_padding():
    from ding.rl_utils import q_nstep_sequence_td_error

    q = torch.zeros(1, 3, 2)
    mask = torch.tensor([[True, False, False]])
    loss, td = q_nstep_sequence_td_error(q, torch.tensor([[0.0, 4.0, 99.0, 99.0]]), torch.zeros(1, 3),
                                         torch.tensor([[1.0, 50.0, 50.0]]), torch.zeros(1, 3), mask, 0.5, 3,
                                         value_rescale=False)
    assert td.tolist() == [[3.0, 0.0, 0.0]]  # 1 + 0.5 * 4; padding gives no error
    assert loss.item() == pytest.approx(9.0)
