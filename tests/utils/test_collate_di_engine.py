"""``diff_shape_collate``, ``default_decollate`` and ``timestep_collate`` with a recurrent model's per-sample states,
as DI-engine's recurrent policies use them."""
from __future__ import annotations

import pytest
import torch

from ding.utils.data import default_collate, default_decollate, diff_shape_collate, timestep_collate


def test_diff_shape_collate_stacks_equal_shapes_and_keeps_the_rest_as_lists():
    batch = [{"obs": torch.zeros(2, 3), "units": torch.zeros(i + 1, 4), "mask": None if i else 1, "r": 1.0}
             for i in range(3)]
    out = diff_shape_collate(batch)
    assert out["obs"].shape == (3, 2, 3)
    assert isinstance(out["units"], list) and [u.shape[0] for u in out["units"]] == [1, 2, 3]
    assert out["mask"] == [1, None, None] and out["r"].dtype == torch.float32


def test_default_decollate_keeps_list_valued_prev_state_per_sample():
    states = [(torch.zeros(1, 8), torch.ones(1, 8)), (torch.ones(1, 8), torch.zeros(1, 8))]
    batch = {"logit": torch.randn(2, 3), "prev_state": states}
    out = default_decollate(batch)
    assert len(out) == 2 and out[1]["prev_state"] is states[1] and out[0]["logit"].shape == (3,)
    without = default_decollate({"logit": torch.randn(2, 3), "prev_state": None})
    assert "prev_state" not in without[0]  # not a per-sample list: left out, as before
    assert default_decollate(default_collate([{"a": torch.ones(2)}] * 2))[0]["a"].shape == (2,)


def test_timestep_collate_is_time_major_and_keeps_states_of_any_shape():
    T, B = 3, 2
    batch = [{"obs": [torch.full((4,), float(b * 10 + t)) for t in range(T)],
              "reward": [torch.tensor([float(t)]) for t in range(T)],
              "done": [t == T - 1 for t in range(T)],
              "prev_state": [[(torch.zeros(3), torch.zeros(5)), (torch.zeros(4),)] for _ in range(T)],
              "action": [[torch.zeros(3), torch.ones(5)] for _ in range(T)]} for b in range(B)]
    out = timestep_collate(batch)
    assert out["obs"].shape == (T, B, 4) and out["obs"][2, 1, 0] == 12.0  # step 2 of sample 1
    assert out["reward"].shape == (T, B) and out["done"].dtype == torch.bool and out["done"][-1].all()
    assert len(out["prev_state"]) == T and len(out["prev_state"][0]) == B and len(out["prev_state"][0][0]) == 2
    assert len(out["action"]) == T and out["action"][0][0].shape == (B, 3) and out["action"][0][1].shape == (B, 5)
    with pytest.raises(ValueError, match="'obs' has different numbers of steps"):
        timestep_collate([batch[0], {**batch[1], "obs": batch[1]["obs"][:2]}])
