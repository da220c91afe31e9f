"""The DQN family's DI-engine forms: multi-discrete heads, IQN / FQF / QR-DQN quantiles, BDQ branches, GTrXL-DQN."""
from __future__ import annotations

import pytest
import torch

from ding.model.common import DiscreteHead, MultiHead
from ding.model.common.gtrxl import GTrXL
from ding.model.template import BDQ, C51DQN, DQN, DRQN, FQF, IQN, QRDQN, GTrXLDQN


def test_multi_head_gives_one_output_per_action_dimension():
    head = MultiHead(DiscreteHead, 8, [2, 3, 6])
    out = head(torch.randn(5, 8))
    assert [t.shape for t in out["logit"]] == [(5, 2), (5, 3), (5, 6)]
    with pytest.raises(ValueError, match="output_size_list"):
        MultiHead(DiscreteHead, 8, [])


@pytest.mark.parametrize("make", [lambda a: DQN(4, a), lambda a: C51DQN(4, a, n_atom=5),
                                  lambda a: QRDQN(4, a, num_quantiles=7)])
def test_multi_discrete_action_shape_lists_each_output(make):
    out = make([2, 3])(torch.randn(5, 4))
    assert [t.shape for t in out["logit"]] == [(5, 2), (5, 3)]


def test_drqn_multi_discrete_in_both_call_forms():
    model = DRQN(4, [2, 3], encoder_hidden_size_list=[16, 8])
    seq = model({"obs": torch.randn(3, 5, 4), "prev_state": [None] * 5}, inference=False)
    assert [t.shape for t in seq["logit"]] == [(3, 5, 2), (3, 5, 3)]
    step = model(torch.randn(5, 4))
    assert [t.shape for t in step["logit"]] == [(5, 2), (5, 3)]


def test_qrdqn_quantile_midpoints_per_sample():
    out = QRDQN(4, 3, num_quantiles=4)(torch.randn(2, 4))
    assert out["q"].shape == (2, 3, 4)
    assert torch.allclose(out["tau"][1, :, 0], torch.tensor([0.125, 0.375, 0.625, 0.875]))
    assert torch.allclose(out["logit"], out["q"].mean(-1))


def test_iqn_draws_fresh_fractions_in_unit_interval():
    model = IQN(4, 3, num_quantiles=6, quantile_embedding_size=16)
    x = torch.randn(2, 4)
    a, b = model(x), model(x)
    assert a["q"].shape == (6, 2, 3) and a["quantiles"].shape == (12, 1)
    assert ((a["quantiles"] >= 0) & (a["quantiles"] <= 1)).all()
    assert not torch.equal(a["quantiles"], b["quantiles"])
    assert torch.allclose(a["logit"], a["q"].mean(0))


def test_fqf_fractions_span_zero_to_one_and_weight_the_mean():
    out = FQF(4, 3, num_quantiles=5, quantile_embedding_size=16)(torch.randn(2, 4))
    tau = out["quantiles"]
    assert tau.shape == (2, 6) and torch.allclose(tau[:, 0], torch.zeros(2))
    assert torch.allclose(tau[:, -1], torch.ones(2)) and (tau[:, 1:] >= tau[:, :-1]).all()
    assert torch.allclose(out["quantiles_hats"], (tau[:, 1:] + tau[:, :-1]) / 2)
    width = (tau[:, 1:] - tau[:, :-1]).unsqueeze(-1)
    assert torch.allclose(out["logit"], (width * out["q"]).sum(1), atol=1e-6)
    assert out["q_tau_i"].shape == (2, 4, 3)


def test_bdq_branches_share_the_value_and_centre_the_advantages():
    model = BDQ(4, num_branches=3, action_bins_per_branch=5)
    x = torch.randn(2, 4)
    q = model(x)["logit"]
    assert q.shape == (2, 3, 5)
    value = model.V(model.encoder(x))  # (B, 1): the mean of every branch's Q-values
    assert torch.allclose(q.mean(-1), value.expand(2, 3), atol=1e-5)


def test_gtrxl_is_causal_and_keeps_a_bounded_memory():
    torch.manual_seed(0)
    core = GTrXL(input_dim=4, head_dim=4, embedding_dim=8, layer_num=2, memory_len=5).eval()
    x = torch.randn(3, 2, 4)
    y = x.clone()
    y[2] += 1.0  # change only the last step
    a = core(x)["logit"]
    core.reset_memory()
    b = core(y)["logit"]
    assert torch.allclose(a[:2], b[:2]) and not torch.allclose(a[2], b[2])
    assert core.get_memory().shape == (3, 3, 2, 8)
    core(torch.randn(4, 2, 4))
    assert core.get_memory().shape == (3, 5, 2, 8)  # capped at memory_len
    core.reset_memory()
    assert core.get_memory() is None


def test_gtrxl_dqn_on_images_and_its_encoder_size_check():
    model = GTrXLDQN([3, 32, 32], [2, 4], encoder_hidden_size_list=[8, 8, 16], hidden_size=16, memory_len=4)
    out = model(torch.rand(3, 2, 3, 32, 32))
    assert [t.shape for t in out["logit"]] == [(3, 2, 2), (3, 2, 4)]
    assert out["transformer_out"].shape == (3, 2, 16)
    with pytest.raises(ValueError, match="must equal hidden_size"):
        GTrXLDQN([3, 32, 32], 2, encoder_hidden_size_list=[8, 8, 32], hidden_size=16)
