"""DI-engine's functional names that its policy files import: namedtuple fields and return shapes/values."""
from __future__ import annotations

import torch

from ding.rl_utils import (
    get_gae,
    get_gae_with_default_last_value,
    ppo_policy_data,
    ppo_policy_error,
    ppo_value_data,
    ppo_value_error,
    q_nstep_td_data,
    q_nstep_td_error_with_rescale,
    q_v_1step_td_data,
    q_v_1step_td_error,
    v_1step_td_data,
    v_1step_td_error,
    value_transform,
)


def test_field_names():
    assert v_1step_td_data._fields == ("v", "next_v", "reward", "done", "weight")
    assert q_v_1step_td_data._fields == ("q", "v", "act", "reward", "done", "weight")
    assert ppo_policy_data._fields == ("logit_new", "logit_old", "action", "adv", "weight")
    assert ppo_value_data._fields == ("value_new", "value_old", "return_", "weight")


def test_v_1step_td_error_value_and_shapes():
    v, next_v = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    loss, per = v_1step_td_error(v_1step_td_data(v, next_v, torch.tensor([1.0, 1.0]), torch.tensor([0.0, 1.0]),
                                                 None), 0.5)
    # targets: 1 + 0.5*3 = 2.5 and 1 (done): errors 1.5^2, 1^2
    assert per.tolist() == [2.25, 1.0] and abs(float(loss) - 1.625) < 1e-6
    twin = v_1step_td_data(torch.zeros(2, 2), torch.zeros(2, 2), torch.ones(2), torch.zeros(2), None)
    assert v_1step_td_error(twin, 0.9)[1].shape == (2, 2)


def test_q_v_1step_and_rescale():
    q = torch.tensor([[1.0, 5.0], [2.0, 0.0]])
    loss, per = q_v_1step_td_error(q_v_1step_td_data(q, torch.tensor([2.0, 2.0]), torch.tensor([1, 0]),
                                                     torch.zeros(2), torch.zeros(2), None), 1.0)
    assert per.tolist() == [9.0, 0.0]
    data = q_nstep_td_data(q, q, torch.tensor([1, 0]), torch.tensor([1, 0]), torch.ones(1, 2), torch.ones(2), None)
    _, per = q_nstep_td_error_with_rescale(data, 0.9, nstep=1)
    target = value_transform(torch.ones(2))
    assert torch.allclose(per, (q[[0, 1], [1, 0]] - target) ** 2)


def test_get_gae_writes_adv_per_transition():
    data = [{"value": torch.tensor(1.0), "reward": torch.tensor([1.0]), "done": False} for _ in range(3)]
    out = get_gae(data, torch.tensor(0.0), gamma=1.0, gae_lambda=1.0)
    # lambda=gamma=1: adv_t = sum of remaining rewards + last_value - V_t = (3 - t) - 1
    assert [float(d["adv"]) for d in out] == [2.0, 1.0, 0.0]
    data = [{"value": torch.tensor(1.0), "reward": torch.tensor([1.0]), "done": False} for _ in range(3)]
    out = get_gae_with_default_last_value(data, False, gamma=1.0, gae_lambda=1.0)
    assert len(out) == 2 and [float(d["adv"]) for d in out] == [2.0, 1.0]


def test_ppo_policy_and_value_error():
    logit = torch.zeros(4, 3, requires_grad=True)
    terms, info = ppo_policy_error(ppo_policy_data(logit, logit.detach(), torch.tensor([0, 1, 2, 0]),
                                                   torch.ones(4), None))
    assert abs(terms.policy_loss.item() + 1.0) < 1e-6 and info.clipfrac == 0.0
    assert terms._fields == ("policy_loss", "entropy_loss")
    value_loss = ppo_value_error(ppo_value_data(torch.zeros(2), torch.zeros(2), torch.ones(2), None))
    assert abs(float(value_loss) - 0.5) < 1e-6
