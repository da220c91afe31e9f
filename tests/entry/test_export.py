"""``ding -m export`` / ``LoadedPolicy.export``: on 1,000 observations of the env, the ONNX file (through
onnxruntime) and the TorchScript file act exactly as ``compute_single_action`` -- for policies trained on the
shipped configs (a few iterations here; to the stop value in the slow variant)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.benchmark._bench_loader import load_bench_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxscript", "onnxruntime"))
FORMATS = ["torchscript", pytest.param("onnx", marks=pytest.mark.skipif(
    not HAS_ONNX, reason="needs the onnx extra: pip install -e '.[onnx]'"))]
ACCEPTANCE = ("dqn", "c51", "ppo_discrete", "ppo_continuous", "sac", "td3", "r2d2")
bench = load_bench_module("bench_export")


def _check_case(case: str, workdir: str, train_iter: int | None, formats: list[str]) -> None:
    import ding
    from ding.envs import scale_action

    run_dir = bench.train(bench.CASES[case], workdir, train_iter)
    policy = ding.load_policy(run_dir, which="latest" if train_iter else "best")
    if train_iter:
        assert policy.train_iter >= train_iter  # trained weights, not the initial ones
    ro = bench.rollout(policy, 1000)
    kind = "discrete" if ro.actions.dtype.kind in "iu" else "continuous"
    assert len(ro.obs) == 1000 and ro.starts.sum() >= 1
    for fmt in formats:
        info = policy.export(os.path.join(workdir, f"{case}.{fmt}"), fmt)
        actor = bench.FileActor(info.path, fmt)
        got = bench.file_actions(actor, ro)
        mismatch, max_diff = bench.compare(ro.actions, got, kind)
        assert mismatch == 0, f"{case} {fmt}: {mismatch} of 1000 actions differ (max diff {max_diff})"
        if kind == "discrete":
            assert got.dtype == np.int64
        else:
            assert max_diff <= 1e-5
        # the shipped continuous configs act in [-1, 1] (env.act_scale): the file scales as the env wrapper does
        assert ("env_action" in info.metadata["outputs"]) == (kind == "continuous")
        if kind == "continuous":
            low, high = (np.array(info.metadata[k], np.float32) for k in ("env_action_low", "env_action_high"))
            out = _outputs(actor, ro.obs[:100].astype(np.float32))
            np.testing.assert_allclose(out[-1], scale_action(ro.actions[:100], low, high), atol=1e-5)
        assert (info.metadata["state_shape"] is not None) == (case == "r2d2")


def _outputs(actor, obs):
    if actor.fmt == "onnx":
        return actor.session.run(None, {"obs": obs})
    import torch

    with torch.no_grad():
        return [t.numpy() for t in actor.module(torch.from_numpy(obs))]


@pytest.mark.parametrize("case", ACCEPTANCE)
def test_exported_actions_equal_compute_single_action(case, tmp_path):
    _check_case(case, str(tmp_path), train_iter=3, formats=["torchscript"] + (["onnx"] if HAS_ONNX else []))


@pytest.mark.slow
@pytest.mark.parametrize("case", list(bench.CASES))
def test_exported_actions_equal_compute_single_action_of_trained_policies(case, tmp_path):
    if not HAS_ONNX:
        pytest.skip("needs the onnx extra: pip install -e '.[onnx]'")
    _check_case(case, str(tmp_path), train_iter=None, formats=["torchscript", "onnx"])


# ------------------------------------------------------------------ the command
@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory):
    return bench.train("cartpole_dqn", str(tmp_path_factory.mktemp("runs")), 3)


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_exports_a_run_directory_and_a_checkpoint_file(dqn_run, fmt, in_tmp_dir, capsys):
    from ding.entry.cli import main
    from ding.policy.export import read_metadata

    assert main(["-m", "export", "--load-path", dqn_run, "--format", fmt]) == 0
    suffix = ".onnx" if fmt == "onnx" else ".pt"
    name = f"{os.path.basename(dqn_run)}_ckpt_best{suffix}"
    assert f"wrote {name}" in capsys.readouterr().out
    assert read_metadata(name)["checkpoint"] == "ckpt_best.pth.tar"
    ckpt = os.path.join(dqn_run, "ckpt", "iteration_5.pth.tar")
    cfg = os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")
    assert main(["-m", "export", "-c", cfg, "--load-path", ckpt, "--format", fmt, "-o", "out/p" + suffix]) == 0
    meta = read_metadata("out/p" + suffix)
    assert (meta["checkpoint"], meta["train_iter"], meta["policy_type"]) == ("iteration_5.pth.tar", 5, "dqn")
    assert not any(f.endswith(suffix) for f in os.listdir(dqn_run))  # nothing written into the run


def test_cli_export_errors_are_one_line(in_tmp_dir, capsys, dqn_run):
    from ding.entry.cli import main

    assert main(["-m", "export"]) == 2
    assert "needs a checkpoint: add --load-path" in capsys.readouterr().err
    assert main(["-m", "export", "--load-path", "nowhere"]) == 1
    assert "CheckpointError: load_policy: 'nowhere' does not exist" in capsys.readouterr().err
    assert main(["-m", "export", "--load-path", dqn_run, "--format", "torchscript", "-o", "."]) == 1
    assert "ExportError: export: output '.' is a directory" in capsys.readouterr().err


def _fresh_run(main, create, run="run"):
    """A run directory holding a freshly initialised policy's checkpoint (what a run of ``main`` would save)."""
    import torch

    from ding.config import compile_config
    from ding.policy import create_policy

    cfg = compile_config(main, create_cfg=create, auto=True, save_cfg=False)
    policy = create_policy(cfg.policy, enable_field=["eval"])
    os.makedirs(os.path.join(run, "ckpt"))
    torch.save({"model": policy.eval_mode.state_dict()["model"]}, os.path.join(run, "ckpt", "ckpt_best.pth.tar"))
    return run


def test_a_league_of_two_players_is_refused(in_tmp_dir):
    import ding
    from ding.config import read_config
    from ding.engine.battle_start import battle_create_config
    from ding.utils import ExportError

    main, create = read_config(os.path.join(ROOT, "config", "serial", "connect_four_ppo_league.py"))
    main.policy.other.league.active_players = dict(main_player=1, main_exploiter=1)
    create = battle_create_config(create, main)  # what serial_pipeline_battle compiles it with
    loaded = ding.load_policy(_fresh_run(main, create), config=(main, create))
    with pytest.raises(ExportError, match=r"league run with 2 active players \(main_player=1, main_exploiter=1\); "
                                          "an exported file holds one policy"):
        loaded.export("league.pt", "torchscript")
    assert not os.path.exists("league.pt")


@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ale-py is not installed: pip install -e "
                                                                       "'.[atari]'")
@pytest.mark.parametrize("fmt", FORMATS)
def test_atari_files_take_uint8_frames_and_scale_them_as_the_model_does(in_tmp_dir, fmt):
    import ding
    from ding.config import read_config

    main, create = read_config(os.path.join(ROOT, "config", "serial", "roadrunner_dqn.py"))
    main.policy.model.encoder_hidden_size_list = [8, 8, 32]  # a small network: the test is about the input path
    policy = ding.load_policy(_fresh_run(main, create), config=(main, create))
    info = policy.export(f"atari.{fmt}", fmt)
    assert (info.metadata["obs_dtype"], info.metadata["obs_shape"]) == ("uint8", [4, 84, 84])
    ro = bench.rollout(policy, 60)
    assert ro.obs.dtype == np.uint8  # (the game's first frames vary little: tests/policy/test_export.py checks
    # the scaling on frames that change the action)
    mismatch, _ = bench.compare(ro.actions, bench.file_actions(bench.FileActor(info.path, fmt), ro), "discrete")
    assert mismatch == 0


# ------------------------------------------------------------------ the standalone example
@pytest.mark.skipif(not HAS_ONNX, reason="needs the onnx extra: pip install -e '.[onnx]'")
def test_standalone_example_acts_with_onnxruntime_and_numpy_only(dqn_run, in_tmp_dir):
    import ding

    policy = ding.load_policy(dqn_run, which="latest")
    policy.export("dqn.onnx", "onnx")
    ro = bench.rollout(policy, 200)
    np.save("obs.npy", ro.obs)
    script = os.path.join(ROOT, "entry", "onnx_policy.py")
    # torch and ding made unimportable: the example must run on onnxruntime and numpy alone
    code = ("import runpy, sys; sys.modules.update(torch=None, ding=None, gymnasium=None); "
            f"sys.argv = [{script!r}, 'dqn.onnx', '--obs', 'obs.npy', '--out', 'act.npy']; "
            f"runpy.run_path({script!r}, run_name='__main__')")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    np.testing.assert_array_equal(np.load("act.npy"), ro.actions)
