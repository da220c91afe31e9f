"""DI-engine's StochasticDuelingHead, EnsembleHead, IMPALAConvEncoder, GaussianFourierProjectionTimeEncoder and
FCEncoder(res_block=True) in ding.model."""
import pytest
import torch

from ding.model import (
    EnsembleHead,
    FCEncoder,
    GaussianFourierProjectionTimeEncoder,
    IMPALAConvEncoder,
    StochasticDuelingHead,
)
from ding.model.common import ResFCBlock


def _all_parameters_get_gradients(module, loss):
    loss.backward()
    return all(p.grad is not None for p in module.parameters() if p.requires_grad)


def test_stochastic_dueling_head_shapes_gradients_and_q_formula():
    torch.manual_seed(0)
    head = StochasticDuelingHead(16, 3, layer_num=2)
    s, a = torch.randn(5, 16), torch.rand(5, 3) * 2 - 1
    mu, sigma = torch.randn(5, 3, requires_grad=True), torch.rand(5, 3).add(0.1).requires_grad_(True)
    out = head(s, a, mu, sigma, sample_size=7)
    assert out["q_value"].shape == (5, 1) and out["v_value"].shape == (5, 1)
    assert _all_parameters_get_gradients(head, out["q_value"].sum())
    assert mu.grad is not None and sigma.grad is not None  # the sampled actions are reparameterised
    # with sigma ~ 0 every sample is tanh(mu): Q = V + A(s, a) - A(s, tanh(mu))
    with torch.no_grad():
        mu0 = torch.zeros(5, 3)
        out = head(s, a, mu0, torch.full((5, 3), 1e-8), sample_size=3)
        expected = out["v_value"] + head.A(torch.cat([s, a], -1)) - head.A(torch.cat([s, torch.tanh(mu0)], -1))
    assert torch.allclose(out["q_value"], expected, atol=1e-5)


def test_stochastic_dueling_head_noise_and_no_tanh():
    head = StochasticDuelingHead(8, 2, noise=True, last_tanh=False)
    assert any(type(m).__name__ == "NoisyLinear" for m in head.modules())
    out = head(torch.randn(3, 8), torch.randn(3, 2), torch.zeros(3, 2), torch.ones(3, 2))
    assert out["q_value"].shape == (3, 1)


def test_ensemble_head_members_are_independent():
    torch.manual_seed(0)
    head = EnsembleHead(4, 2, hidden_size=8, layer_num=2, ensemble_num=3)
    x = torch.randn(6, 4 * 3, 1)
    out = head(x)["pred"]
    assert out.shape == (6, 2 * 3)
    changed = x.clone()
    changed[:, 4:8] += 1.0  # member 1's inputs only
    out2 = head(changed)["pred"]
    assert torch.equal(out[:, :2], out2[:, :2]) and torch.equal(out[:, 4:], out2[:, 4:])
    assert not torch.equal(out[:, 2:4], out2[:, 2:4])
    assert _all_parameters_get_gradients(head, out.sum())
    with pytest.raises(ValueError, match="ensemble_num >= 1"):
        EnsembleHead(4, 2, 8, 1, 0)


def test_impala_conv_encoder_shapes_scaling_and_init():
    enc = IMPALAConvEncoder((3, 20, 30), channels=(4, 8), outsize=32, nblock=1)
    x = torch.randint(0, 256, (2, 3, 20, 30), dtype=torch.uint8)
    out = enc(x)
    assert out.shape == (2, 32) and (out >= 0).all()  # final ReLU
    assert torch.allclose(enc(x), enc(x.float()))  # uint8 pixels and their float values encode alike
    assert torch.allclose(enc.dense.weight.norm(dim=1), torch.full((32, ), 1.4), atol=1e-5)
    assert torch.count_nonzero(enc.dense.bias) == 0
    raw = IMPALAConvEncoder((3, 20, 30), channels=(4, 8), outsize=32, nblock=1, final_relu=False, batch_norm=True)
    assert (raw(x.float()) < 0).any()
    assert _all_parameters_get_gradients(enc, enc(x).sum())
    with pytest.raises(ValueError, match=r"obs_shape must be \(C, H, W\)"):
        IMPALAConvEncoder((3, 64))


def test_gaussian_fourier_time_encoder():
    enc = GaussianFourierProjectionTimeEncoder(16, scale=1.0)
    assert "W" in enc.state_dict() and not list(enc.parameters())  # fixed features, not trained
    t = torch.tensor([0.0, 0.5])
    out = enc(t)
    assert out.shape == (2, 16)
    assert torch.allclose(out[0], torch.cat([torch.zeros(8), torch.ones(8)]))  # t = 0: sin 0, cos 0
    assert torch.allclose(out.pow(2)[:, :8] + out.pow(2)[:, 8:], torch.ones(2, 8), atol=1e-6)
    with pytest.raises(ValueError, match="even int"):
        GaussianFourierProjectionTimeEncoder(7)


def test_fc_encoder_res_block_and_dropout():
    enc = FCEncoder(5, [16, 16, 16], res_block=True, activation=torch.nn.Tanh())
    assert sum(isinstance(m, ResFCBlock) for m in enc.modules()) == 3
    assert enc(torch.randn(4, 5)).shape == (4, 16)
    with pytest.raises(ValueError, match="one hidden size throughout"):
        FCEncoder(5, [16, 32], res_block=True)
    dropped = FCEncoder(5, [16, 8], dropout=0.5)
    assert sum(isinstance(m, torch.nn.Dropout) for m in dropped.modules()) == 2
    assert not any(isinstance(m, torch.nn.Dropout) for m in FCEncoder(5, [16, 8]).modules())


def test_reparameterization_head_fixed_sigma_is_exact_and_log_sigma_param():
    from ding.model import ReparameterizationHead

    fixed = ReparameterizationHead(8, 3, sigma_type="fixed", fixed_sigma_value=0.3)
    assert fixed(torch.randn(2, 8))["sigma"].eq(torch.full((2, 3), 0.3)).all()
    assert "log_sigma" in fixed.state_dict()  # the checkpoint layout is unchanged
    independent = ReparameterizationHead(8, 3, sigma_type="independent")
    assert independent.log_sigma_param is independent.log_sigma
    independent(torch.randn(2, 8))["sigma"].sum().backward()
    assert independent.log_sigma_param.grad is not None
    with pytest.raises(AttributeError):
        _ = fixed.log_sigma_param


def test_vac_with_impala_encoders():
    from ding.model import VAC

    shared = VAC((3, 32, 32), 4, share_encoder=True, impala_cnn_encoder=True)
    assert isinstance(shared.actor_encoder, IMPALAConvEncoder) and shared.critic_encoder is shared.actor_encoder
    out = shared(torch.rand(2, 3, 32, 32) * 255, "compute_actor_critic")
    assert out["logit"].shape == (2, 4) and out["value"].shape == (2, )
    separate = VAC((3, 32, 32), 4, share_encoder=False, impala_cnn_encoder=True, encoder_hidden_size_list=[8, 16])
    assert separate.critic_encoder is not separate.actor_encoder and separate.actor_encoder.output_size == 16
    with pytest.raises(ValueError, match=r"impala_cnn_encoder=True needs image observations"):
        VAC(8, 4, impala_cnn_encoder=True)
