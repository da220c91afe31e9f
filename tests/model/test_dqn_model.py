import pytest
import torch
import torch.nn as nn

from ding.model import DQN, ConvEncoder, DiscreteHead, DuelingHead, FCEncoder, create_model
from ding.utils import ConfigError, RegistryError


def test_dqn_output_shape_and_default_dueling():
    model = DQN(4, 2)
    out = model(torch.zeros(5, 4))
    assert set(out) == {"logit"} and out["logit"].shape == (5, 2)
    assert isinstance(model.head, DuelingHead) and isinstance(model.encoder, FCEncoder)
    assert isinstance(DQN([4], [2], dueling=False).head, DiscreteHead)


def test_dueling_head_combines_value_and_centred_advantage():
    head = DuelingHead(8, 3)
    x = torch.randn(6, 8)
    q = head(x)["logit"]
    assert q.shape == (6, 3)
    # Q = V + A - mean(A): the mean over actions is exactly V, and Q - mean(Q) is A - mean(A).
    assert torch.allclose(q.mean(-1, keepdim=True), head.V(x), atol=1e-6)
    adv = head.A(x)
    assert torch.allclose(q - q.mean(-1, keepdim=True), adv - adv.mean(-1, keepdim=True), atol=1e-6)


def test_head_hidden_size_and_layers():
    model = DQN(4, 3, encoder_hidden_size_list=[16, 8], dueling=False, head_hidden_size=32, head_layer_num=2)
    linears = [m for m in model.head.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(8, 32), (32, 32), (32, 3)]
    assert model(torch.zeros(2, 4))["logit"].shape == (2, 3)


@pytest.mark.parametrize("norm_type", ["LN", "BN"])
def test_norm_types(norm_type):
    model = DQN(4, 2, encoder_hidden_size_list=[8, 8], norm_type=norm_type)
    assert model(torch.randn(3, 4))["logit"].shape == (3, 2)


def test_unknown_norm_type():
    with pytest.raises(ValueError, match="unknown normalisation 'GN'"):
        DQN(4, 2, norm_type="GN")


def test_image_obs_uses_conv_encoder():
    model = DQN([3, 32, 32], 4, encoder_hidden_size_list=[8, 16, 32])
    assert isinstance(model.encoder, ConvEncoder)
    assert model(torch.zeros(2, 3, 32, 32))["logit"].shape == (2, 4)


def test_conv_encoder_checks_layer_lists():
    with pytest.raises(ValueError, match="kernel_size .* one entry per conv layer"):
        ConvEncoder([3, 32, 32], [8, 16, 32], kernel_size=[3])


def test_bad_shapes():
    with pytest.raises(ValueError, match=r"obs_shape \(4, 4\): use an int"):
        DQN([4, 4], 2)
    with pytest.raises(ValueError, match="got an empty shape"):
        DQN(4, [])


def test_custom_activation():
    model = DQN(4, 2, encoder_hidden_size_list=[8], activation=nn.Tanh())
    assert any(isinstance(m, nn.Tanh) for m in model.modules())
    assert not any(isinstance(m, nn.ReLU) for m in model.modules())


def test_create_model_from_config():
    model = create_model({"type": "dqn", "obs_shape": 4, "action_shape": 2, "dueling": False})
    assert isinstance(model, DQN) and isinstance(model.head, DiscreteHead)


def test_create_model_wrong_kwarg_names_key_and_accepted_args():
    with pytest.raises(ConfigError, match=r"policy\.model\.hidden_size_list: unknown argument of model .*DQN; "
                                          r"did you mean 'encoder_hidden_size_list'\? accepted arguments: obs_shape"):
        create_model({"type": "dqn", "obs_shape": 4, "action_shape": 2, "hidden_size_list": [8]}, where="policy.model")


def test_create_model_missing_required_arg():
    with pytest.raises(ConfigError, match=r"model\.action_shape: required by model .*DQN but missing"):
        create_model({"type": "dqn", "obs_shape": 4})


def test_create_model_unknown_type():
    with pytest.raises(RegistryError, match=r"model\.type: unknown model type 'dqm'.*Did you mean 'dqn'"):
        create_model({"type": "dqm", "obs_shape": 4, "action_shape": 2})
    with pytest.raises(ConfigError, match=r"model\.type: missing"):
        create_model({"obs_shape": 4})
