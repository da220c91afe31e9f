"""Package metadata: the license is an SPDX expression (the TOML-table form warns at every install)."""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_license_is_an_spdx_string():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    assert re.search(r'^license = "Apache-2.0"$', text, re.MULTILINE)
    assert re.search(r'^requires = \["setuptools>=77"\]', text, re.MULTILINE)  # the first to read that form
    assert importlib.metadata.metadata("ding")["License-Expression"] == "Apache-2.0"


def test_torch_floor_is_where_tensors_only_loading_is_safe():
    """Every checkpoint is read with torch.load(weights_only=True), which is itself unsafe before torch 2.6
    (CVE-2025-32434): the declared floor must not go below it. (Parallel mode's policy files are not torch files.)"""
    import torch

    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        floor = re.search(r'"torch>=(\d+)\.(\d+)', f.read())
    assert floor and (int(floor.group(1)), int(floor.group(2))) >= (2, 6)
    installed = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    assert installed >= (2, 6)


def test_the_core_install_keeps_seven_runtime_dependencies_and_the_extras_are_separate():
    """MuJoCo and envpool are extras: `pip install ding` pulls neither; `.[mujoco]` / `.[envpool]` add them."""
    requires = importlib.metadata.requires("ding") or []
    core = sorted(r.split(";")[0].strip() for r in requires if "extra ==" not in r)
    names = {re.split(r"[<>=!\[ ]", r, maxsplit=1)[0].lower() for r in core}
    assert names == {"torch", "numpy", "gymnasium", "easydict", "tensorboardx", "flask", "requests"}, core
    extras = {}
    for r in requires:
        m = re.search(r'extra == "([^"]+)"', r)
        if m:
            extras.setdefault(m.group(1), []).append(r.split(";")[0].strip())
    assert any(r.startswith("mujoco") for r in extras["mujoco"])
    assert any("gymnasium[mujoco]" in r for r in extras["mujoco"])
    assert any(r.startswith("envpool") for r in extras["envpool"])


def _build_extension(tmp_path, env_extra: dict) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`setup.py build_ext` into tmp_path (never into the source tree), as the install's build step runs it."""
    env = dict(os.environ, **env_extra)
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(tmp_path / "lib"),
                           "--build-temp", str(tmp_path / "tmp")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    built = [str(p) for p in (tmp_path / "lib").rglob("_segtree*")]
    return done, built


def test_the_segment_tree_extension_builds_cleanly_and_is_optional(tmp_path):
    """With a compiler the C file builds without a warning; without one (CC=false) the build still succeeds, so the
    install does too, and the buffer falls back to its numpy trees."""
    pytest.importorskip("setuptools", reason="the extension is built by setuptools, which this venv lacks")
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is not None:
        done, built = _build_extension(tmp_path / "with", {})
        assert done.returncode == 0 and built, done.stdout + done.stderr
        assert "_segtree.c:" not in done.stdout + done.stderr, done.stderr  # a compiler diagnostic names file:line
    done, built = _build_extension(tmp_path / "without", {"CC": "false", "LDSHARED": "false"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert not built and "_segtree" in done.stderr  # the failure is reported, not hidden


def test_tracking_and_tuning_are_extras():
    """W&B, MLflow and Optuna install with `.[wandb]`, `.[mlflow]`, `.[tune]`; the core install pulls none of them."""
    requires = importlib.metadata.requires("ding") or []
    extras: dict[str, list[str]] = {}
    for r in requires:
        m = re.search(r'extra == "([^"]+)"', r)
        if m:
            extras.setdefault(m.group(1), []).append(re.split(r"[<>=!\[ ;]", r, maxsplit=1)[0].lower())
    assert "wandb" in extras["wandb"] and "mlflow-skinny" in extras["mlflow"] and "optuna" in extras["tune"]
    core = [r for r in requires if "extra ==" not in r]
    assert not [r for r in core if r.lower().startswith(("wandb", "mlflow", "optuna"))]
