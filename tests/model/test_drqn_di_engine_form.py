"""DRQN called the way DI-engine's ``r2d2.py`` calls it: ``model({'obs', 'prev_state'}, inference=...,
saved_state_timesteps=...)``, giving the same values as ding's own form."""
from __future__ import annotations

import torch

from ding.model import DRQN


def test_inference_step_matches_ding_form_and_carries_per_sample_states():
    torch.manual_seed(0)
    model = DRQN(obs_shape=4, action_shape=3, encoder_hidden_size_list=[16, 8])
    obs = torch.randn(2, 4)
    out = model({"obs": obs, "prev_state": [None, None]}, inference=True)
    ref = model(obs)
    assert torch.allclose(out["logit"], ref["logit"])
    assert len(out["next_state"]) == 2 and out["next_state"][1]["h"].shape == (1, 1, 8)
    again = model({"obs": obs, "prev_state": out["next_state"]}, inference=True)
    assert torch.allclose(again["logit"], model(obs, ref["next_state"])["logit"])


def test_sequence_with_saved_states():
    torch.manual_seed(1)
    model = DRQN(obs_shape=4, action_shape=3, encoder_hidden_size_list=[16, 8])
    seq = torch.randn(5, 2, 4)  # time-major (T, B, N)
    out = model({"obs": seq, "prev_state": [None, None]}, inference=False, saved_state_timesteps=[2, 5])
    ref = model(seq.transpose(0, 1))  # ding: batch-major (B, T, N)
    assert out["logit"].shape == (5, 2, 3) and torch.allclose(out["logit"], ref["logit"].transpose(0, 1), atol=1e-6)
    assert out["hidden_state"].shape == (5, 2, 8)
    first_two = model(seq[:2].transpose(0, 1))["next_state"]
    assert torch.allclose(out["saved_state"][0][0]["h"].flatten(), first_two[0, 0], atol=1e-6)
    assert torch.allclose(out["saved_state"][1][1]["c"].flatten(), ref["next_state"][1, 1], atol=1e-6)
