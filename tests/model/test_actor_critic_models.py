import pytest
import torch

from ding.model import VAC, ContinuousQAC, create_model


def test_vac_discrete_shared_encoder():
    model = VAC(4, 3, encoder_hidden_size_list=[16, 8])
    x = torch.randn(5, 4)
    out = model(x, "compute_actor_critic")
    assert out["logit"].shape == (5, 3) and out["value"].shape == (5,)
    assert model.actor_encoder is model.critic_encoder
    assert torch.allclose(model(x, "compute_actor")["logit"], out["logit"])
    assert torch.allclose(model(x, "compute_critic")["value"], out["value"])


def test_vac_continuous_separate_encoders():
    model = VAC(3, 2, action_space="continuous", share_encoder=False, encoder_hidden_size_list=[8],
                bound_type="tanh")
    out = model(torch.randn(4, 3), "compute_actor_critic")
    assert out["logit"]["mu"].shape == (4, 2) and (out["logit"]["sigma"] > 0).all()
    assert out["logit"]["mu"].abs().max() < 1 and model.actor_encoder is not model.critic_encoder


def test_vac_errors():
    with pytest.raises(ValueError, match="VAC action_space: unknown 'box'"):
        VAC(4, 2, action_space="box")
    with pytest.raises(ValueError, match="VAC.forward: unknown mode 'actor'"):
        VAC(4, 2)(torch.zeros(1, 4), "actor")


def test_continuous_qac_regression_twin():
    model = ContinuousQAC(3, 2, twin_critic=True, actor_head_hidden_size=16, critic_head_hidden_size=16)
    obs = torch.randn(6, 3)
    action = model(obs, "compute_actor")["action"]
    assert action.shape == (6, 2) and action.abs().max() < 1
    q = model({"obs": obs, "action": action}, "compute_critic")["q_value"]
    assert isinstance(q, list) and len(q) == 2 and q[0].shape == (6,) and not torch.allclose(q[0], q[1])


def test_continuous_qac_reparameterization_and_1d_action():
    model = create_model({"type": "continuous_qac", "obs_shape": 3, "action_shape": 1,
                          "action_space": "reparameterization"})
    logit = model(torch.randn(4, 3), "compute_actor")["logit"]
    assert isinstance(logit, list) and len(logit) == 2  # DI-engine's contract: mu, sigma = out['logit']
    mu, sigma = logit
    assert mu.shape == (4, 1) and sigma.shape == (4, 1) and (sigma > 0).all()
    q = model({"obs": torch.randn(4, 3), "action": torch.randn(4)}, "compute_critic")["q_value"]
    assert q.shape == (4,)
    with pytest.raises(ValueError, match="ContinuousQAC action_space: unknown 'hybrid'"):
        ContinuousQAC(3, 1, action_space="hybrid")


def test_a_config_names_the_activation_and_every_hidden_layer_uses_it():
    model = create_model({"type": "vac", "obs_shape": 11, "action_shape": 3, "action_space": "continuous",
                          "encoder_hidden_size_list": [64, 64], "activation": "Tanh"}, where="policy.model")
    kinds = {type(m) for m in model.modules()}
    assert torch.nn.Tanh in kinds and torch.nn.ReLU not in kinds
    out = model(torch.zeros(2, 11), mode="compute_actor_critic")
    assert out["logit"]["mu"].shape == (2, 3)


def test_an_unknown_activation_name_is_one_config_error_naming_the_key():
    from ding.utils import ConfigError

    with pytest.raises(ConfigError, match=r"policy\.model\.activation: unknown activation 'tanhh'; did you mean "
                                          r"'tanh'\?"):
        create_model({"type": "vac", "obs_shape": 4, "action_shape": 2, "activation": "tanhh"},
                     where="policy.model")
