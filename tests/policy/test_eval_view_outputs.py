"""An eval ``forward`` that returns a tensor (as policies written for DI-engine's ``MetricSerialEvaluator`` do) comes
back as it is, instead of crashing in the numpy conversion."""
from __future__ import annotations

import torch
from easydict import EasyDict

from ding.model import DQN
from ding.policy import DQNPolicy


class TensorEvalDQN(DQNPolicy):
    tensor_io = None  # as a policy file written for DI-engine: its outputs tell
    def _forward_eval(self, data, **kwargs):
        return self._model(torch.as_tensor(data, dtype=torch.float32))["logit"]


def test_eval_forward_returning_a_tensor_passes_through():
    cfg = EasyDict(DQNPolicy.default_config())
    cfg.model = dict(obs_shape=4, action_shape=2)
    policy = TensorEvalDQN(cfg, model=DQN(obs_shape=4, action_shape=2))
    out = policy.eval_mode.forward(torch.zeros(3, 4))
    assert isinstance(out, torch.Tensor) and out.shape == (3, 2)
