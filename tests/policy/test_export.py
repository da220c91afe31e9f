"""ding.policy.export / eval_actor: what an exported file holds, pixel preprocessing, and the refusals."""
from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np
import pytest
import torch

from ding.policy import DQNPolicy, SACPolicy
from ding.policy.eval_actor import eval_actor, register_eval_actor
from ding.policy.export import export_policy, read_metadata
from ding.utils import ExportError

HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxscript", "onnxruntime"))
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="needs the onnx extra: pip install -e '.[onnx]'")


def _dqn(**model: Any) -> DQNPolicy:
    torch.manual_seed(0)
    return DQNPolicy(dict(model=dict(dict(obs_shape=4, action_shape=3, encoder_hidden_size_list=[16, 16]), **model)),
                     enable_field=["eval"])


def _eval_actions(policy: Any, obs: np.ndarray) -> np.ndarray:
    out = policy.eval_mode.forward({i: o for i, o in enumerate(obs)})
    return np.stack([np.asarray(out[i]["action"]) for i in range(len(obs))])


def _load_ts(path: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.load(path)


def test_torchscript_file_acts_like_eval_mode_and_carries_its_description(tmp_path):
    policy = _dqn()
    obs = np.random.default_rng(0).standard_normal((50, 4)).astype(np.float32)
    info = export_policy(policy, tmp_path / "dqn.pt", "torchscript", metadata={"note": "x"})
    assert info.size_bytes == (tmp_path / "dqn.pt").stat().st_size > 0
    meta = read_metadata(tmp_path / "dqn.pt")
    assert meta == info.metadata
    assert (meta["inputs"], meta["outputs"], meta["obs_shape"], meta["action_kind"], meta["note"]) == (
        ["obs"], ["action"], [4], "discrete", "x")
    with torch.no_grad():
        got = _load_ts(str(tmp_path / "dqn.pt"))(torch.from_numpy(obs)).numpy()
    np.testing.assert_array_equal(got, _eval_actions(policy, obs))
    assert got.dtype == np.int64


def test_export_leaves_the_policy_as_it_was(tmp_path):
    policy = _dqn()
    before = {k: v.clone() for k, v in policy._model.state_dict().items()}
    policy._model.train(True)
    export_policy(policy, tmp_path / "dqn.pt", "torchscript")
    assert policy._model.training  # the export worked on a copy
    assert all(torch.equal(before[k], v) for k, v in policy._model.state_dict().items())


def test_uint8_pixels_are_scaled_inside_the_file(tmp_path):
    torch.manual_seed(0)
    policy = DQNPolicy(dict(model=dict(obs_shape=[2, 36, 36], action_shape=4, encoder_hidden_size_list=[8, 8, 32])),
                       enable_field=["eval"])
    with torch.no_grad():
        for p in policy._model.parameters():
            p.mul_(3.0)  # larger Q-value gaps: argmax actions that vary between frames
    obs = np.random.default_rng(1).integers(0, 256, (40, 2, 36, 36), dtype=np.uint8)
    export_policy(policy, tmp_path / "px.pt", "torchscript", obs_dtype="uint8")
    assert read_metadata(tmp_path / "px.pt")["obs_dtype"] == "uint8"
    with torch.no_grad():
        got = _load_ts(str(tmp_path / "px.pt"))(torch.from_numpy(obs)).numpy()
    expected = _eval_actions(policy, obs)
    np.testing.assert_array_equal(got, expected)
    assert len(set(expected.tolist())) > 1
    assert (_eval_actions(policy, obs.astype(np.float32)) != expected).any()  # unscaled pixels act otherwise


def test_env_action_output_scales_onto_the_bounds_as_the_env_wrapper_does(tmp_path):
    from ding.envs import scale_action

    torch.manual_seed(0)
    policy = SACPolicy(dict(model=dict(obs_shape=3, action_shape=2, action_space="reparameterization")),
                       enable_field=["eval"])
    low, high = np.array([-2.0, 0.0], np.float32), np.array([2.0, 5.0], np.float32)
    export_policy(policy, tmp_path / "sac.pt", "torchscript", env_action_bounds=(low, high))
    assert read_metadata(tmp_path / "sac.pt")["outputs"] == ["action", "env_action"]
    obs = np.random.default_rng(0).standard_normal((30, 3)).astype(np.float32) * 3
    with torch.no_grad():
        action, env_action = (t.numpy() for t in _load_ts(str(tmp_path / "sac.pt"))(torch.from_numpy(obs)))
    expected = _eval_actions(policy, obs)
    np.testing.assert_allclose(action, expected, atol=1e-6)
    np.testing.assert_allclose(env_action, scale_action(expected, low, high), atol=1e-5)


def test_a_policy_with_its_own_eval_action_is_refused_until_it_registers_one(tmp_path):
    class Greedy2(DQNPolicy):
        def _forward_eval(self, data):
            return {k: {"action": np.int64(2)} for k in data}

    torch.manual_seed(0)
    policy = Greedy2(dict(model=dict(obs_shape=4, action_shape=3)), enable_field=["eval"])
    with pytest.raises(ExportError, match="Greedy2 overrides _forward_eval of DQNPolicy.*register_eval_actor"):
        export_policy(policy, tmp_path / "x.pt", "torchscript")
    assert not (tmp_path / "x.pt").exists()

    class Always2(torch.nn.Module):
        obs_shape = (4,)

        def forward(self, obs):
            return torch.full((obs.shape[0],), 2, dtype=torch.int64)

    from ding.policy.eval_actor import EvalActor

    register_eval_actor(Greedy2)(lambda p: EvalActor(Always2(), (4,), "discrete"))
    export_policy(policy, tmp_path / "x.pt", "torchscript")
    with torch.no_grad():
        assert _load_ts(str(tmp_path / "x.pt"))(torch.zeros(5, 4)).tolist() == [2] * 5


def test_a_policy_ding_knows_no_eval_action_for_is_one_clear_error():
    from ding.policy import Policy

    def nothing(self, *args, **kwargs):
        return None

    methods = {name: nothing for name in Policy.__abstractmethods__}
    methods["default_model"] = lambda self: ("dqn", ["ding.model.template.q_learning"])
    Bare = type("Bare", (Policy,), methods)
    policy = Bare(dict(type="bare", model=dict(obs_shape=4, action_shape=2)), enable_field=["eval"])
    with pytest.raises(ExportError, match=r"Bare \(policy type 'bare'\) cannot be exported.*DQNPolicy"):
        eval_actor(policy)


def test_bad_format_dtype_and_output_are_named(tmp_path):
    policy = _dqn()
    with pytest.raises(ExportError, match="unknown format 'tflite'; use one of onnx, torchscript"):
        export_policy(policy, tmp_path / "x", "tflite")
    with pytest.raises(ExportError, match="dtype 'float64'"):
        export_policy(policy, tmp_path / "x", "torchscript", obs_dtype="float64")
    with pytest.raises(ExportError, match="is a directory; give a file name"):
        export_policy(policy, tmp_path, "torchscript")


def test_onnx_without_the_extra_says_how_to_install_it(tmp_path, monkeypatch):
    import ding.policy.export as export

    monkeypatch.setattr(export, "_importable", lambda name: name != "onnxscript")
    with pytest.raises(ExportError, match=r"needs onnxscript \(not installed\).*pip install -e '.\[onnx\]'"):
        export_policy(_dqn(), tmp_path / "x.onnx", "onnx")


@needs_onnx
def test_onnx_file_runs_in_onnxruntime_for_any_batch_size(tmp_path):
    import onnxruntime as ort

    policy = _dqn()
    info = export_policy(policy, tmp_path / "dqn.onnx", "onnx")
    assert read_metadata(tmp_path / "dqn.onnx") == info.metadata
    session = ort.InferenceSession(str(tmp_path / "dqn.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs"]
    for n in (1, 2, 7, 300):
        obs = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        (got,) = session.run(None, {"obs": obs})
        np.testing.assert_array_equal(got, _eval_actions(policy, obs))


def test_the_onnx_extra_holds_the_exporter_and_the_runtime():
    import importlib.metadata

    requires = importlib.metadata.requires("ding") or []
    names = sorted(r.split(";")[0].split(">")[0].strip() for r in requires if 'extra == "onnx"' in r)
    assert names == ["onnx", "onnxruntime", "onnxscript"]
