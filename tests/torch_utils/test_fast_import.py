"""The lean Adam gives torch's Adam results bit for bit, and training never imports torch._dynamo."""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest
import torch

from ding.torch_utils.fast_import import _LazyAdam


@pytest.mark.parametrize("fused", [False, True])
def test_lean_adam_matches_torch_adam(fused):
    torch.manual_seed(0)
    m1 = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    m2 = copy.deepcopy(m1)
    lean = _LazyAdam()(m1.parameters(), lr=1e-2, fused=fused)
    ref = torch.optim.Adam(m2.parameters(), lr=1e-2, fused=fused)
    assert isinstance(lean, torch.optim.Adam)
    for _ in range(25):
        x = torch.randn(32, 4)
        for m, opt in ((m1, lean), (m2, ref)):
            opt.zero_grad()
            m(x).pow(2).sum().backward()
            opt.step()
    assert all(torch.equal(a, b) for a, b in zip(m1.parameters(), m2.parameters()))
    # the state dicts are interchangeable
    ref.load_state_dict(lean.state_dict())
    lean.load_state_dict(ref.state_dict())


def test_training_does_not_import_dynamo(tmp_path):
    code = """
import sys
from ding.entry import serial_pipeline
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config, create_config
main_config.exp_name = 'no_dynamo'
serial_pipeline((main_config, create_config), seed=0, max_train_iter=30)
print('DYNAMO', 'torch._dynamo' in sys.modules)
"""
    env = dict(os.environ)
    env.pop("DING_KEEP_DYNAMO_GUARDS", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert "DYNAMO False" in out.stdout
