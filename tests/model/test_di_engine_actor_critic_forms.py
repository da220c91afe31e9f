"""DI-engine's actor-critic forms: VAC's multi-discrete and hybrid actions, DiscreteQAC, ContinuousMAQAC (and
MAQAC's ``{'obs': ...}`` input), DREAMERVAC."""
from __future__ import annotations

import pytest
import torch

from ding.model import DREAMERVAC, MAQAC, VAC, ContinuousMAQAC, DiscreteMAQAC, DiscreteQAC


def test_vac_multi_discrete_gives_a_logit_per_dimension():
    model = VAC(4, [2, 3, 6])
    out = model(torch.randn(5, 4), "compute_actor_critic")
    assert model.multi_head and model.action_shape == (2, 3, 6)
    assert [t.shape for t in out["logit"]] == [(5, 2), (5, 3), (5, 6)] and out["value"].shape == (5,)
    with pytest.raises(ValueError, match="continuous action is one int"):
        VAC(4, [2, 3], action_space="continuous")


def test_vac_hybrid_action():
    model = VAC(4, {"action_type_shape": 3, "action_args_shape": 2}, action_space="hybrid")
    logit = model(torch.randn(5, 4), "compute_actor")["logit"]
    assert logit["action_type"].shape == (5, 3)
    assert logit["action_args"]["mu"].shape == (5, 2) and (logit["action_args"]["sigma"] > 0).all()
    with pytest.raises(ValueError, match="hybrid action space needs a dict"):
        VAC(4, 3, action_space="hybrid")


@pytest.mark.parametrize("twin", [False, True])
def test_discrete_qac_layout_and_outputs(twin):
    model = DiscreteQAC(6, 4, twin_critic=twin)
    obs = torch.randn(3, 6)
    q = model(obs, "compute_critic")["q_value"]
    qs = q if twin else [q]
    assert len(qs) == (2 if twin else 1) and all(t.shape == (3, 4) for t in qs)
    assert model(obs, "compute_actor")["logit"].shape == (3, 4)
    assert isinstance(model.critic[0], torch.nn.Identity)  # vectors go to the heads as they are
    image = DiscreteQAC([3, 32, 32], 4, encoder_hidden_size_list=[8, 8, 16])
    assert image(torch.rand(2, 3, 32, 32), "compute_actor")["logit"].shape == (2, 4)
    assert image.actor[0] is not image.critic[0]


def test_maqac_takes_di_engine_obs_wrapping():
    assert DiscreteMAQAC is MAQAC
    model = MAQAC(5, 7, 3)
    obs = {"agent_state": torch.randn(2, 4, 5), "global_state": torch.randn(2, 7),
           "action_mask": torch.ones(2, 4, 3)}
    a = model(obs, "compute_actor")["logit"]
    b = model({"obs": obs}, "compute_actor")["logit"]
    assert torch.equal(a, b)
    with pytest.raises(KeyError, match="agent_state"):
        model({"state": 1}, "compute_actor")


@pytest.mark.parametrize("space", ["regression", "reparameterization"])
def test_continuous_maqac(space):
    model = ContinuousMAQAC(5, 7, 2, space, twin_critic=True)
    obs = {"agent_state": torch.randn(3, 4, 5), "global_state": torch.randn(3, 4, 7)}
    out = model(obs, "compute_actor")
    if space == "regression":
        assert out["action"].shape == (3, 4, 2) and out["action"].abs().max() <= 1
    else:
        mu, sigma = out["logit"]
        assert mu.shape == sigma.shape == (3, 4, 2) and (sigma > 0).all()
    q = model({"obs": obs, "action": torch.randn(3, 4, 2)}, "compute_critic")["q_value"]
    assert len(q) == 2 and q[0].shape == (3, 4)


def test_dreamer_vac_starts_at_zero_value_and_bounds_sigma():
    model = DREAMERVAC(8, 3, dyn_stoch=4, dyn_deter=8, dyn_discrete=2, units=16)
    feat = torch.randn(5, model.feat_size)
    critic = model(feat, "compute_critic")
    assert critic["value_logit"].shape == (5, 255) and torch.allclose(critic["value"], torch.zeros(5), atol=1e-5)
    logit = model(feat, "compute_actor")["logit"]
    assert logit["mu"].shape == (5, 3) and ((logit["sigma"] >= 0.1) & (logit["sigma"] <= 1.0)).all()
    onehot = DREAMERVAC(8, 3, dyn_stoch=4, dyn_deter=8, dyn_discrete=2, units=16, actor_dist="onehot")
    probs = onehot(feat, "compute_actor")["logit"].exp()
    assert torch.allclose(probs.sum(-1), torch.ones(5)) and (probs >= 0.01 / 3 - 1e-6).all()  # the uniform mix
