"""DI-engine's model options ding's templates take: ``VAC.actor`` / ``.critic`` and ``VAC(encoder=...)``, and
``ContinuousQAC``'s image-only options refused with a message."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from ding.model import VAC, ContinuousQAC


def test_vac_actor_and_critic_views_hold_the_parameters_without_changing_the_state_dict():
    model = VAC(obs_shape=4, action_shape=2, share_encoder=False)
    keys = set(model.state_dict())
    actor, critic = {id(p) for p in model.actor.parameters()}, {id(p) for p in model.critic.parameters()}
    assert not actor & critic and actor | critic == {id(p) for p in model.parameters()}
    assert set(model.state_dict()) == keys and not any(k.startswith(("actor.", "critic.")) for k in keys)
    opt = torch.optim.SGD(model.actor.parameters(), lr=0.1)  # DI-engine's PPO: one optimizer per part
    model(torch.randn(3, 4), "compute_actor")["logit"].sum().backward()
    before = [p.clone() for p in model.critic.parameters()]
    opt.step()
    assert all(torch.equal(a, b) for a, b in zip(before, model.critic.parameters()))


def test_vac_with_a_user_encoder():
    encoder = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
    model = VAC(obs_shape=4, action_shape=3, share_encoder=True, encoder=encoder, encoder_hidden_size_list=[16])
    out = model(torch.randn(5, 4), "compute_actor_critic")
    assert out["logit"].shape == (5, 3) and out["value"].shape == (5,) and model.actor_encoder is encoder
    separate = VAC(obs_shape=4, action_shape=3, share_encoder=False, encoder=encoder, encoder_hidden_size_list=[16])
    assert separate.actor_encoder is encoder and separate.critic_encoder is not encoder  # the critic's own copy
    assert torch.equal(separate.critic_encoder[0].weight, encoder[0].weight)
    with pytest.raises(ValueError, match="output size is unknown"):
        VAC(obs_shape=4, action_shape=3, encoder=encoder)


def test_continuous_qac_share_encoder():
    ContinuousQAC(obs_shape=3, action_shape=1, action_space="regression", share_encoder=False)
    with pytest.raises(ValueError, match="for image observations"):
        ContinuousQAC(obs_shape=3, action_shape=1, action_space="regression", share_encoder=True)
