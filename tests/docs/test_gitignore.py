"""Run outputs stay out of ``git status``: what a literal walk of README.md and docs/*.md wrote in the repository
root (found by the issue-38 walk on a fresh clone) is covered by ``.gitignore``, while the shipped files are not."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# every path the walk left in the clone's root, by page
WALK_OUTPUTS = {
    "README.md": ["cartpole_dqn_seed0/", "cartpole_dqn_seed0_261203_090558/", "cartpole_dqn_seed3/",
                  "cartpole_dqn_parallel_seed0/", "eval_return_cartpole_dqn.png"],
    "docs/python_api.md": ["tune_lr/"],
    "docs/serial.md": ["cartpole_ppo_seed0/"],
    "docs/export.md": ["export_demo/", "export_demo_ckpt_best.onnx", "export_demo_ckpt_best.pt", "demo.onnx",
                       "demo.pt", "obs.npy", "cartpole_dqn.pt"],
    "docs/tracking.md": ["cartpole_dqn_tracked/", "mlflow.db", "mlruns/", "wandb/"],
    "docs/tuning.md": ["cartpole_dqn_seed0_tune/", "cartpole_dqn_seed0_best/"],
    "docs/offline.md": ["cartpole_expert.hdf5", "cartpole_bc_offline/"],
    "docs/league.md": ["league_demo/", "c4_short/"],
}
SHIPPED = ["config/serial/cartpole_dqn.py", "entry/onnx_policy.py", "docs/export.md", "README.md"]


def _ignored(paths: list[str]) -> set[str]:
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(paths),
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return set(proc.stdout.split())


@pytest.mark.skipif(shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")),
                    reason="needs git and a checkout")
def test_the_walk_outputs_are_ignored_and_shipped_files_are_not():
    outputs = [p for paths in WALK_OUTPUTS.values() for p in paths]
    missing = sorted(set(outputs) - _ignored(outputs))
    assert not missing, f".gitignore does not cover these run outputs of the docs: {missing}"
    assert not _ignored(SHIPPED), "a .gitignore pattern hides a shipped file"
