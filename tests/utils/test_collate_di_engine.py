"""``diff_shape_collate`` and ``default_decollate`` with a recurrent model's per-sample states, as DI-engine's
recurrent policies use them."""
from __future__ import annotations

import torch

from ding.utils.data import default_collate, default_decollate, diff_shape_collate


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
