"""The learn state DI-engine's policy files keep outside their state dicts (ding/policy/extra_state.py)."""
from __future__ import annotations

import pytest
import torch

from ding.policy.extra_state import extra_state, load_extra_state


class SacLike:
    """The attributes DI-engine's SAC / TD3 files set in ``_init_learn``."""

    def __init__(self, alpha: float = 0.2) -> None:
        self._log_alpha = torch.log(torch.tensor([alpha])).requires_grad_()
        self._alpha_optim = torch.optim.Adam([self._log_alpha], lr=0.1)
        self._alpha = self._log_alpha.detach().exp()
        self._forward_learn_cnt = 0
        self._nstep = 1
        self._priority = False
        self._weight = torch.nn.Parameter(torch.zeros(2))

    def step(self) -> None:
        self._alpha_optim.zero_grad()
        (self._log_alpha * 3.0).sum().backward()
        self._alpha_optim.step()
        self._alpha = self._log_alpha.detach().exp()
        self._forward_learn_cnt += 1


def test_own_tensors_and_counters_are_saved_other_attributes_are_not():
    policy = SacLike()
    policy.step()
    state = extra_state(policy)
    assert set(state) == {"_log_alpha", "_alpha", "_forward_learn_cnt"}
    assert state["_forward_learn_cnt"] == {"counter": 1}
    assert torch.equal(state["_log_alpha"]["tensor"], policy._log_alpha.detach())
    assert not state["_log_alpha"]["tensor"].requires_grad
    policy.step()  # the saved copy does not follow the live tensor
    assert not torch.equal(state["_log_alpha"]["tensor"], policy._log_alpha.detach())


def test_a_restored_policy_continues_as_the_saved_one_would():
    a = SacLike()
    for _ in range(3):
        a.step()
    b = SacLike()
    optimizer_state = a._alpha_optim.state_dict()
    load_extra_state(b, extra_state(a))
    b._alpha_optim.load_state_dict(optimizer_state)
    assert torch.equal(a._alpha, b._alpha) and b._forward_learn_cnt == 3
    log_alpha = b._log_alpha
    a.step()
    b.step()
    assert b._log_alpha is log_alpha  # copied in place: the optimizer still updates the policy's tensor
    assert torch.equal(a._log_alpha, b._log_alpha) and torch.equal(a._alpha, b._alpha)


def test_a_tensor_of_another_shape_is_named():
    state = extra_state(SacLike())
    state["_log_alpha"]["tensor"] = torch.zeros(3)
    with pytest.raises(ValueError, match=r"SacLike\._log_alpha: the checkpoint holds a tensor of shape \(3,\), the "
                                         r"policy one of shape \(1,\)"):
        load_extra_state(SacLike(), state)
