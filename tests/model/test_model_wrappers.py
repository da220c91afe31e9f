"""DI-engine's model wrappers against their documented behaviour."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from ding.model import IModelWrapper, model_wrap, register_wrapper
from ding.utils import RegistryError


class Fixed(nn.Module):
    """logit favours action 0 for every row."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 3)

    def forward(self, x):
        return {"logit": torch.tensor([[5.0, 0.0, 0.0]]).repeat(x.shape[0], 1)}


def test_attribute_pass_through_reaches_the_module():
    model = Fixed()
    wrapped = model_wrap(model_wrap(model, wrapper_name="argmax_sample"), wrapper_name="base")
    wrapped.eval()
    assert not model.training
    wrapped.train()
    assert model.training
    sd = wrapped.state_dict()
    assert set(sd) == {"lin.weight", "lin.bias"}
    wrapped.load_state_dict({k: torch.zeros_like(v) for k, v in sd.items()})
    assert torch.equal(model.lin.weight, torch.zeros(3, 2))
    assert "ArgmaxSampleWrapper" in wrapped.info("forward")


def test_argmax_and_eps_greedy_frequency():
    np.random.seed(0)
    x = torch.zeros(20000, 2)
    assert (model_wrap(Fixed(), wrapper_name="argmax_sample").forward(x)["action"] == 0).all()
    action = model_wrap(Fixed(), wrapper_name="eps_greedy_sample").forward(x, eps=0.3)["action"]
    # random with probability 0.3, uniform over 3 actions: non-greedy share 0.3 * 2/3 = 0.2
    assert abs(float((action != 0).float().mean()) - 0.2) < 0.015
    with pytest.raises(TypeError, match="eps"):
        model_wrap(Fixed(), wrapper_name="eps_greedy_sample").forward(x)


def test_multinomial_follows_softmax():
    torch.manual_seed(0)
    action = model_wrap(Fixed(), wrapper_name="multinomial_sample").forward(torch.zeros(20000, 2))["action"]
    p0 = float(torch.softmax(torch.tensor([5.0, 0.0, 0.0]), 0)[0])
    assert abs(float((action == 0).float().mean()) - p0) < 0.01


def test_target_assign_every_freq_and_momentum():
    online, target = nn.Linear(2, 2), nn.Linear(2, 2)
    t = model_wrap(target, wrapper_name="target", update_type="assign", update_kwargs={"freq": 3})
    before = target.weight.clone()
    t.update(online.state_dict())
    t.update(online.state_dict())
    assert torch.equal(target.weight, before)
    t.update(online.state_dict())
    assert torch.equal(target.weight, online.weight)
    nn.init.zeros_(target.weight)
    m = model_wrap(target, wrapper_name="target", update_type="momentum", update_kwargs={"theta": 0.25})
    m.update(online.state_dict())
    assert torch.allclose(target.weight, 0.25 * online.weight)
    t.reset(target_update_count=2)
    assert t.update_count == 2


class Recurrent(nn.Module):
    def forward(self, data):
        prev = [torch.zeros(1) if s is None else s for s in data["prev_state"]]
        return {"logit": data["obs"], "next_state": [p + 1 for p in prev]}


def test_hidden_state_kept_and_reset_per_env_id():
    w = model_wrap(Recurrent(), wrapper_name="hidden_state", state_num=3, save_prev_state=True)
    w.forward({"obs": torch.zeros(3, 1)})
    out = w.forward({"obs": torch.zeros(2, 1)}, data_id=[0, 2])
    assert [float(s) for s in out["prev_state"]] == [1.0, 1.0]
    w.reset(data_id=[2])
    w.forward({"obs": torch.zeros(3, 1)})
    assert [float(w._state[i]) for i in range(3)] == [3.0, 2.0, 1.0]


class Actor(nn.Module):
    def forward(self, x):
        return {"action": torch.zeros(x.shape[0], 1)}


def test_action_noise_is_clipped():
    torch.manual_seed(0)
    w = model_wrap(Actor(), wrapper_name="action_noise", noise_type="gauss",
                   noise_kwargs={"mu": 0.0, "sigma": 10.0}, noise_range={"min": -0.5, "max": 0.5},
                   action_range={"min": -1, "max": 1})
    a = w.forward(torch.zeros(1000, 1))["action"]
    assert a.abs().max() <= 0.5 and (a.abs() == 0.5).float().mean() > 0.9


def test_deterministic_and_reparam_sample():
    class Gauss(nn.Module):
        def forward(self, x):
            return {"logit": {"mu": torch.ones(x.shape[0], 2), "sigma": torch.full((x.shape[0], 2), 0.1)}}
    torch.manual_seed(0)
    assert torch.equal(model_wrap(Gauss(), wrapper_name="deterministic_sample").forward(torch.zeros(4, 1))["action"],
                       torch.ones(4, 2))
    a = model_wrap(Gauss(), wrapper_name="reparam_sample").forward(torch.zeros(5000, 1))["action"]
    assert abs(float(a.mean()) - 1.0) < 0.01 and abs(float(a.std()) - 0.1) < 0.01


def test_unknown_wrapper_is_named_and_register_wrapper_adds_one():
    with pytest.raises(RegistryError, match="no model wrapper named 'nope'"):
        model_wrap(Fixed(), wrapper_name="nope")

    class Double(IModelWrapper):
        def forward(self, x):
            return {"logit": self._model.forward(x)["logit"] * 2}
    register_wrapper("test_double", Double)
    assert float(model_wrap(Fixed(), wrapper_name="test_double").forward(torch.zeros(1, 2))["logit"][0, 0]) == 10.0
