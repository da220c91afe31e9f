"""DI-engine's helpers a policy author imports: optimizers with clip/ignore options, tensor helpers, collate under
both paths, minibatches, running statistics, default_preprocess_learn, and the missing-name error."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ding.torch_utils
import ding.utils.data
from ding.policy.common_utils import default_preprocess_learn
from ding.torch_utils import Adam, ContrastiveLoss, RMSprop, to_dtype, unsqueeze
from ding.utils import RegistryError, RunningMeanStd, import_module, split_data_generator


def _param_with_grad(grad):
    p = torch.nn.Parameter(torch.zeros(len(grad)))
    p.grad = torch.tensor(grad, dtype=torch.float32)
    return p


def test_adam_defaults_match_torch():
    p = torch.nn.Parameter(torch.ones(3))
    opt = Adam([p])
    assert opt.defaults["lr"] == 1e-3 and opt.defaults["betas"] == (0.9, 0.999) and opt.defaults["eps"] == 1e-8
    ref = torch.nn.Parameter(torch.ones(3))
    ref_opt = torch.optim.Adam([ref])
    for _ in range(3):
        for q, o in ((p, opt), (ref, ref_opt)):
            o.zero_grad()
            (q ** 2).sum().backward()
            o.step()
    assert torch.allclose(p, ref)


def test_clip_value_and_clip_norm():
    p = _param_with_grad([3.0, -4.0])
    Adam([p], grad_clip_type="clip_value", clip_value=1.0)._grad_control.apply([p])
    assert p.grad.tolist() == [1.0, -1.0]
    p = _param_with_grad([3.0, -4.0])
    RMSprop([p], grad_clip_type="clip_norm", clip_value=1.0)._grad_control.apply([p])
    assert abs(float(p.grad.norm()) - 1.0) < 1e-4


def test_ignore_value_skips_the_step():
    p = _param_with_grad([3.0, -4.0])
    opt = Adam([p], lr=0.1, grad_ignore_type="ignore_value", ignore_value=2.0)
    opt.step()
    assert p.tolist() == [0.0, 0.0] and p.grad.tolist() == [0.0, 0.0]
    p.grad = torch.tensor([1.0, -1.0])
    opt.step()
    assert p[0] < 0 < p[1]


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="grad_clip_type='clip_norm' needs clip_value"):
        Adam([torch.nn.Parameter(torch.ones(1))], grad_clip_type="clip_norm")
    with pytest.raises(ValueError, match="optim_type"):
        Adam([torch.nn.Parameter(torch.ones(1))], optim_type="sgd")


def test_tensor_helpers_and_one_collate():
    assert ding.utils.data.default_collate is ding.torch_utils.default_collate
    assert ding.utils.data.default_decollate is ding.torch_utils.default_decollate
    out = to_dtype({"a": torch.ones(2, dtype=torch.int64), "b": [torch.zeros(1)]}, torch.float16)
    assert out["a"].dtype == torch.float16 and out["b"][0].dtype == torch.float16
    assert unsqueeze({"x": torch.zeros(3)}, 0)["x"].shape == (1, 3)
    assert ContrastiveLoss(4, 4, heads=[2, 1])(torch.randn(6, 4), torch.randn(6, 4)).dim() == 0


def test_split_data_generator_covers_every_row():
    np.random.seed(0)
    data = {"obs": torch.arange(10).float().unsqueeze(1), "meta": {"id": torch.arange(10)}, "none": None}
    batches = list(split_data_generator(data, 4, shuffle=True))
    assert [b["obs"].shape[0] for b in batches] == [4, 4, 4]
    seen = torch.cat([b["meta"]["id"] for b in batches])
    assert set(seen.tolist()) == set(range(10)) and batches[0]["none"] is None


def test_running_mean_std():
    rms = RunningMeanStd(epsilon=1e-4)
    x = np.random.RandomState(0).normal(3.0, 2.0, 10000)
    rms.update(x[:5000])
    rms.update(x[5000:])
    assert abs(rms.mean - x.mean()) < 1e-3 and abs(rms.std - x.std()) < 1e-3


def test_default_preprocess_learn_layout():
    samples = [{"obs": np.zeros(4, np.float32), "action": torch.tensor(1), "reward": torch.tensor([1.0, 0.5]),
                "done": False, "IS": 0.5, "value": torch.tensor([2.0])} for _ in range(3)]
    batch = default_preprocess_learn(samples, use_priority=True, use_priority_IS_weight=True, use_nstep=True)
    assert batch["reward"].shape == (2, 3) and batch["done"].dtype == torch.float32
    assert batch["weight"].tolist() == [0.5] * 3 and batch["action"].shape == (3,) and batch["value"].shape == (3,)
    with pytest.raises(ValueError, match="use_priority_IS_weight needs use_priority"):
        default_preprocess_learn(samples, use_priority_IS_weight=True)


def test_a_missing_ding_name_is_named_with_the_importing_file(tmp_path, monkeypatch):
    pkg = tmp_path / "mypolicies"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "uses_missing.py").write_text("from ding.torch_utils import Adam, NoSuchHelper\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistryError, match=r"'NoSuchHelper' from 'ding.torch_utils' is imported by user code "
                                            r"\(.*uses_missing.py, line 1\) but ding does not provide it"):
        import_module(["mypolicies.uses_missing"])
