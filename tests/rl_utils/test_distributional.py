"""C51's projection and loss against small hand-computed examples, and a property test on random supports."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ding.rl_utils import categorical_projection, dist_nstep_td_data, dist_nstep_td_error


def _proj(probs, ret, discount, v_min=-1.0, v_max=1.0):
    return categorical_projection(torch.tensor([probs]), torch.tensor([ret]), torch.tensor([discount]), v_min, v_max)[0]


def test_projection_splits_mass_between_neighbouring_atoms():
    # support [-1, 0, 1]; 0.5 + 0.5 * z = [0, 0.5, 1]: atom 0 lands on 0, atom 1 halfway between 0 and 1, atom 2 on 1
    assert torch.allclose(_proj([0.2, 0.5, 0.3], 0.5, 0.5), torch.tensor([0.0, 0.45, 0.55]))


def test_projection_with_a_negative_shift_and_clipping_at_v_min():
    # -0.25 + z = [-1.25 (clipped to -1), -0.25, 0.75]
    assert torch.allclose(_proj([0.2, 0.5, 0.3], -0.25, 1.0), torch.tensor([0.325, 0.45, 0.225]))


def test_projection_without_bootstrap_puts_all_mass_at_the_clipped_return():
    assert torch.allclose(_proj([0.2, 0.5, 0.3], 3.0, 0.0), torch.tensor([0.0, 0.0, 1.0]))
    assert torch.allclose(_proj([0.2, 0.5, 0.3], 0.0, 0.0), torch.tensor([0.0, 1.0, 0.0]))


def test_projection_keeps_total_mass_on_random_inputs():
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(64, 51), -1)
    proj = categorical_projection(probs, torch.randn(64) * 5, torch.rand(64), -10.0, 10.0)
    assert torch.allclose(proj.sum(-1), torch.ones(64), atol=1e-5)
    assert (proj >= 0).all()


def _data(next_act=0, done=False, weight=None):
    dist = torch.full((1, 2, 5), 0.2)  # support [-2, -1, 0, 1, 2], uniform online distributions
    next_dist = torch.zeros(1, 2, 5)
    next_dist[0, 0, 3] = 1.0  # action 0 is worth exactly 1
    next_dist[0, 1, 0] = 1.0  # action 1 is worth exactly -2
    reward = torch.tensor([[1.0], [0.0]])  # (nstep, B)
    return dist_nstep_td_data(dist, next_dist, torch.tensor([1]), torch.tensor([next_act]), reward,
                              torch.tensor([done]), weight)


def test_dist_loss_is_the_cross_entropy_with_the_projected_two_step_target():
    # ret = 1 + 0.5 * 0 = 1; bootstrap 0.25 * 1 -> 1.25 = 0.75 on atom 1 and 0.25 on atom 2; log-prob log 0.2 each
    loss, per_sample = dist_nstep_td_error(_data(), 0.5, -2.0, 2.0, 5, nstep=2)
    assert loss.item() == pytest.approx(math.log(5))
    assert per_sample.shape == (1,)


def test_dist_loss_reads_the_target_at_the_given_next_action_and_stops_at_done():
    online = torch.log_softmax(torch.tensor([[[0.0, 0.0, 1.0, 2.0, 3.0]] * 2]), -1)
    lp = online[0, 1]
    # action 1 (worth -2): 1 + 0.25 * -2 = 0.5 -> halfway between atoms 0 and 1 (indices 2, 3)
    loss, _ = dist_nstep_td_error(_data(next_act=1), 0.5, -2.0, 2.0, 5, nstep=2, log_dist=online)
    assert loss.item() == pytest.approx(-(0.5 * lp[2] + 0.5 * lp[3]).item())
    # done: only the return, exactly atom 1 (index 3)
    loss, _ = dist_nstep_td_error(_data(done=True), 0.5, -2.0, 2.0, 5, nstep=2, log_dist=online)
    assert loss.item() == pytest.approx(-lp[3].item())


def test_dist_loss_weights_and_value_gamma():
    loss, _ = dist_nstep_td_error(_data(weight=torch.tensor([3.0])), 0.5, -2.0, 2.0, 5, nstep=2)
    assert loss.item() == pytest.approx(3 * math.log(5))
    # value_gamma 0 (e.g. nothing left to bootstrap): target exactly at 1
    online = torch.log_softmax(torch.arange(10.0).view(1, 2, 5), -1)
    loss, _ = dist_nstep_td_error(_data(), 0.5, -2.0, 2.0, 5, nstep=2, value_gamma=torch.tensor([0.0]), log_dist=online)
    assert loss.item() == pytest.approx(-online[0, 1, 3].item())


def test_dist_loss_refuses_a_distribution_of_another_size():
    with pytest.raises(ValueError, match="5 atoms but n_atom=51"):
        dist_nstep_td_error(_data(), 0.5, -2.0, 2.0, 51, nstep=2)


@pytest.mark.parametrize(("v_min", "v_max"), [(0.1, 0.3), (-5.0, 0.3)])
def test_projection_of_targets_on_v_max_stays_inside_supports_that_are_not_integer_ranges(v_min, v_max):
    """The supports the issue names: in float32 a target clipped to v_max gave an atom index past the last atom."""
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(8, 51), -1)
    proj = categorical_projection(probs, torch.full((8,), v_max), torch.full((8,), 0.99), v_min, v_max)
    assert torch.allclose(proj.sum(-1), torch.ones(8))
    # v_max + 0.99 z >= v_max for every atom z >= 0: all of their mass lands on the last atom
    at_or_above = (probs * (torch.linspace(v_min, v_max, 51) >= 0)).sum(-1)
    assert bool((proj[:, -1] >= at_or_above - 1e-6).all()) and bool((at_or_above > 0).all())


def _float32(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32))


@settings(max_examples=300, deadline=None)
@given(
    v_min=st.floats(-50.0, 50.0, allow_nan=False),
    width=st.floats(1e-3, 100.0, allow_nan=False),
    n_atom=st.integers(2, 101),
    gamma=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_projection_property_on_random_supports(v_min, width, n_atom, gamma, seed):
    """No error, each target sums to 1, its mean is the mean of the clipped shifted atoms, and the mass of the atoms
    clipped at either end sits on the edge atom."""
    v_max = v_min + width
    gen = torch.Generator().manual_seed(seed)
    batch = 16
    probs = torch.softmax(3 * torch.randn(batch, n_atom, generator=gen), -1)
    probs[0] = 0.0
    probs[0, -1] = 1.0  # one target entirely at the top atom
    # returns around and beyond both ends of the support, some exactly on v_min / v_max
    ret = v_min + width * (2.5 * torch.rand(batch, generator=gen) - 0.75)
    ret[1], ret[2] = v_max, v_min
    done = torch.rand(batch, generator=gen) < 0.3
    discount = gamma * (~done).float()
    proj = categorical_projection(probs, ret, discount, v_min, v_max)

    assert proj.shape == probs.shape and bool(torch.isfinite(proj).all()) and bool((proj >= 0).all())
    assert torch.allclose(proj.sum(-1), torch.ones(batch), atol=1e-4)
    support = torch.linspace(v_min, v_max, n_atom).double()
    tz = (ret.double().unsqueeze(-1) + discount.double().unsqueeze(-1) * support).clamp(v_min, v_max)
    p = probs.double()
    expected_mean = (p * tz).sum(-1)
    assert torch.allclose((proj.double() * support).sum(-1), expected_mean, atol=1e-4 * (1 + abs(v_min) + width))
    # an atom whose target is past an end (by more than float32 rounding) puts all its mass on that end
    eps = 1e-5 * (1 + abs(v_min) + abs(v_max))
    shifted = ret.double().unsqueeze(-1) + discount.double().unsqueeze(-1) * support
    above = (p * (shifted >= _float32(v_max) + eps)).sum(-1)
    below = (p * (shifted <= _float32(v_min) - eps)).sum(-1)
    assert bool((proj[:, -1].double() >= above - 1e-4).all())
    assert bool((proj[:, 0].double() >= below - 1e-4).all())
    assert proj[1].sum().item() == pytest.approx(1.0, abs=1e-4)
