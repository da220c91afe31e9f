"""NoisyLinear, the distributional heads (C51 / Rainbow) and the recurrent Q-network (DRQN)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ding.model import C51DQN, DRQN, NoisyLinear, RainbowDQN, create_model, set_noise
from ding.utils import ConfigError


def test_noisy_linear_resamples_its_noise_at_every_forward():
    torch.manual_seed(0)
    layer = NoisyLinear(4, 3)
    x = torch.ones(2, 4)
    a, b = layer(x), layer(x)
    assert not torch.equal(a, b)
    # the same noise is shared by the whole batch within one forward
    assert torch.equal(a[0], a[1])


def test_noisy_linear_without_noise_is_the_mean_linear_layer_whatever_the_train_mode():
    layer = NoisyLinear(4, 3)
    x = torch.randn(5, 4)
    assert set_noise(layer, False) == 1
    for train in (True, False):
        layer.train(train)
        assert torch.equal(layer(x), F.linear(x, layer.weight_mu, layer.bias_mu))
    set_noise(layer, True)
    layer.eval()
    assert not torch.equal(layer(x), layer(x))  # eval() alone does not switch noise off


def test_noisy_linear_noise_is_factorised_and_seeded_by_torch():
    layer = NoisyLinear(3, 2, sigma0=0.5)
    with torch.no_grad():
        layer.weight_mu.zero_()
        layer.bias_mu.zero_()
    torch.manual_seed(7)
    e_in, e_out = torch.randn(3), torch.randn(2)
    f_in, f_out = e_in.sign() * e_in.abs().sqrt(), e_out.sign() * e_out.abs().sqrt()
    expected_w = layer.weight_sigma.detach() * torch.outer(f_out, f_in)
    expected_b = layer.bias_sigma.detach() * f_out
    torch.manual_seed(7)
    out = layer(torch.eye(3))
    assert torch.allclose(out, (expected_w.t() + expected_b), atol=1e-6)
    # sigma starts at sigma0 / sqrt(in_features)
    assert torch.allclose(layer.weight_sigma, torch.full((2, 3), 0.5 / 3 ** 0.5))


def test_c51_outputs_a_distribution_and_its_expectation():
    model = C51DQN(4, 3, encoder_hidden_size_list=[16, 8], v_min=-2, v_max=2, n_atom=5)
    out = model(torch.randn(6, 4))
    assert out["distribution"].shape == (6, 3, 5)
    assert torch.allclose(out["distribution"].sum(-1), torch.ones(6, 3), atol=1e-6)
    expected = (out["distribution"] * torch.linspace(-2, 2, 5)).sum(-1)
    assert torch.allclose(out["logit"], expected, atol=1e-6)
    assert torch.allclose(out["log_distribution"].exp(), out["distribution"])
    assert not any(isinstance(m, NoisyLinear) for m in model.modules())


def test_rainbow_is_dueling_and_noisy_and_deterministic_with_noise_off():
    torch.manual_seed(0)
    model = RainbowDQN(4, 2)
    assert model.head.dueling and set_noise(model, True) == 4  # A and V streams, hidden and output layer each
    x = torch.randn(3, 4)
    assert not torch.equal(model(x)["logit"], model(x)["logit"])
    set_noise(model, False)
    assert torch.equal(model(x)["logit"], model(x)["logit"])
    plain = RainbowDQN(4, 2, noise=False, dueling=False)
    assert set_noise(plain, True) == 0 and not plain.head.dueling


def test_c51_refuses_an_empty_support():
    with pytest.raises(ValueError, match=r"v_min \(5\) must be below v_max \(5\)"):
        C51DQN(4, 2, v_min=5, v_max=5)
    with pytest.raises(ConfigError, match="policy.model.n_atom"):
        create_model(dict(type="c51dqn", obs_shape=4, action_shape=2, n_atom=1), where="policy.model")


def test_di_engine_model_arguments_are_accepted():
    create_model(dict(type="c51dqn", obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64],
                      v_min=-10, v_max=10, n_atom=51))
    create_model(dict(type="rainbowdqn", obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64]))
    create_model(dict(type="drqn", obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64]))


def test_drqn_sequence_forward_equals_stepping_one_step_at_a_time():
    torch.manual_seed(0)
    model = DRQN(4, 2, encoder_hidden_size_list=[16, 8])
    obs = torch.randn(3, 5, 4)
    state0 = torch.randn(3, 2, 8)
    seq = model(obs, state0)
    state, steps = state0, []
    for t in range(5):
        out = model(obs[:, t], state)
        steps.append(out["logit"])
        state = out["next_state"]
    assert torch.allclose(seq["logit"], torch.stack(steps, 1), atol=1e-5)
    assert torch.allclose(seq["next_state"], state, atol=1e-5)
    assert seq["next_state"].shape == (3, 2, 8)


def test_drqn_without_a_state_starts_from_zeros_and_res_link_changes_the_output():
    model = DRQN(4, 2, encoder_hidden_size_list=[8])
    x = torch.randn(2, 4)
    assert torch.equal(model(x)["logit"], model(x, torch.zeros(2, 2, 8))["logit"])
    with pytest.raises(ValueError, match="lstm_type 'gru'"):
        DRQN(4, 2, lstm_type="gru")
