"""Issue #22 item 8: the small things the docs said that the code did differently."""
from __future__ import annotations

import logging
import os
import re
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_show_hooks_output_in_hooks_md_is_what_the_defaults_give(in_tmp_dir, cartpole_dqn):
    import ding
    from ding.worker.learner import show_hooks
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    with open(os.path.join(ROOT, "docs", "hooks.md")) as f:
        page = f.read()
    documented = re.search(r"with the default hooks:\n\n```\n(.*?)```", page, re.S).group(1).strip()
    with ding.Trainer((main_config, create_config), max_train_iter=1) as trainer:
        assert show_hooks(trainer.learner.hooks).strip() == documented


def test_eval_suggests_the_checkpoint_path_a_run_has(in_tmp_dir):
    from ding.entry.application_entry import _example_checkpoint

    os.makedirs("run")
    assert _example_checkpoint("run") == os.path.join("run", "ckpt", "ckpt_best.pth.tar")
    os.makedirs("run/ckpt")
    assert _example_checkpoint("run/ckpt") == os.path.join("run/ckpt", "ckpt_best.pth.tar")


def test_damaged_checkpoint_warning_is_short_and_names_the_one_used(in_tmp_dir, caplog):
    from ding.worker import load_latest_checkpoint

    os.makedirs("ckpt")
    torch.save({"model": {}}, "ckpt/iteration_10.pth.tar")
    with open("ckpt/iteration_20.pth.tar", "wb") as f:
        f.write(b"PK\x03\x04" + os.urandom(300))
    log = logging.getLogger("t22.ckpt")
    with caplog.at_level(logging.WARNING, logger="t22.ckpt"):
        path, _ = load_latest_checkpoint("ckpt", log)
    assert path.endswith("iteration_10.pth.tar")
    lines = [r.getMessage() for r in caplog.records]
    assert any("using iteration_10, the last good checkpoint" in m for m in lines)
    skipped = [m for m in lines if m.startswith("skipping damaged checkpoint")]
    assert skipped and all("older checkpoint" not in m and "\n" not in m and len(m) < 300 for m in skipped), skipped


def test_parallel_config_package_does_not_import_its_module_early():
    import importlib

    pkg = "dizoo.classic_control.cartpole.config.parallel"
    for name in [m for m in sys.modules if m.startswith(pkg)]:
        del sys.modules[name]
    module = importlib.import_module(pkg)
    assert f"{pkg}.cartpole_dqn_config" not in sys.modules  # else `python -m` of it warns (RuntimeWarning)
    assert module.cartpole_dqn_system_config.coordinator is not None  # DI-engine's names still work


def test_tune_lr_docstring_names_the_directories_it_writes():
    with open(os.path.join(ROOT, "entry", "tune_lr.py")) as f:
        text = f.read()
    assert "lr_<value>_seed<seed>/" in text and 'exp_name=f"tune_lr/lr_{lr:g}_seed{seed}"' in text
