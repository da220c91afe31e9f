"""MAVAC's DI-engine forms: ``encoder=(actor_encoder, critic_encoder)`` and the ``actor`` / ``critic`` views."""
import pytest
import torch
import torch.nn as nn

from ding.model.template.mavac import MAVAC

B, A, N_ACT = 4, 3, 5


def _data(obs=6, state=7):
    return {"agent_state": torch.randn(B, A, obs), "global_state": torch.randn(B, A, state),
            "action_mask": torch.ones(B, A, N_ACT)}


def test_given_encoders_are_used_and_views_hold_the_models_parameters():
    actor_enc, critic_enc = nn.Linear(6, 16), nn.Linear(7, 12)
    model = MAVAC(6, 7, N_ACT, A, actor_head_hidden_size=16, critic_head_hidden_size=12,
                  encoder=(actor_enc, critic_enc))
    assert model.actor_encoder is actor_enc and model.critic_encoder is critic_enc
    out = model(_data(), mode="compute_actor_critic")
    assert out["logit"].shape == (B, A, N_ACT) and out["value"].shape == (B, A)
    # the views group the model's own parameters: actor = encoder + head, critic likewise
    actor_ids = {id(p) for p in model.actor.parameters()}
    critic_ids = {id(p) for p in model.critic.parameters()}
    assert {id(p) for p in actor_enc.parameters()} <= actor_ids
    assert {id(p) for p in model.actor_head.parameters()} <= actor_ids
    assert {id(p) for p in critic_enc.parameters()} <= critic_ids
    assert actor_ids.isdisjoint(critic_ids)
    assert actor_ids | critic_ids == {id(p) for p in model.parameters()}
    # the views add no state-dict keys
    assert not any(k.startswith(("actor.", "critic.")) for k in model.state_dict())
    out["logit"].sum().backward()
    assert all(p.grad is not None for p in model.actor.parameters())
    assert all(p.grad is None for p in model.critic.parameters())


def test_bad_encoder_is_one_clear_error():
    with pytest.raises(ValueError, match="encoder"):
        MAVAC(6, 7, N_ACT, A, encoder=nn.Linear(6, 16))
