"""Issue #22 item 1: modules a config names in ``import_names`` are found beside the config file.

A hook, an episode callback and an env module in ``my_project/`` next to the config; ``ding -m serial -c
<that file>`` is run as a real subprocess from ANOTHER directory, with no PYTHONPATH. Each plugin leaves a mark, so the
test checks that all three were imported and used, not only that the run did not fail.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ding.utils import RegistryError, import_module
from ding.utils.import_dirs import CONFIG_DIR_ENV

HOOKS = '''
import os
from ding.worker.learner import LearnerHook, register_learner_hook


class MarkHook(LearnerHook):
    def __call__(self, learner):
        with open(os.path.join(learner.exp_name, "hook_ran"), "w") as f:
            f.write(str(learner.train_iter))


register_learner_hook("t22_mark", MarkHook)
'''

CALLBACKS = '''
from ding.utils import EPISODE_CALLBACK_REGISTRY
from ding.worker.collector import EpisodeCallback


@EPISODE_CALLBACK_REGISTRY.register("t22_steps")
class StepsCallback(EpisodeCallback):
    def on_episode_end(self, env_id, episode_info):
        return {"t22_len": float(episode_info["step"])}

    def on_train_result(self, result):
        result["t22_callback"] = 1
'''

ENVS = '''
from ding.utils import ENV_REGISTRY
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv


@ENV_REGISTRY.register("t22_cartpole")
class MyCartPole(CartPoleEnv):
    pass
'''

CONFIG = '''
import copy

from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

main_config, create_config = copy.deepcopy(main_config), copy.deepcopy(create_config)  # never the shared module's
main_config.exp_name = "beside_run"
main_config.env.collector_env_num = 2
main_config.env.evaluator_env_num = 1
main_config.env.n_evaluator_episode = 1
main_config.policy.learn.learner = dict(
    import_names=["my_project.hooks"],
    hook=dict(log_show_after_iter=100000,
              mark=dict(type="t22_mark", position="after_run")),
)
main_config.policy.collect.collector = dict(import_names=["my_project.callbacks"],
                                            callbacks=[dict(type="t22_steps")])
create_config.env = dict(type="t22_cartpole", import_names=["my_project.envs"])
'''


def _project(root) -> str:
    pkg = root / "proj" / "my_project"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "hooks.py").write_text(HOOKS)
    (pkg / "callbacks.py").write_text(CALLBACKS)
    (pkg / "envs.py").write_text(ENVS)
    cfg = root / "proj" / "hook_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    return str(cfg)


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop(CONFIG_DIR_ENV, None)
    return env


def test_hook_callback_env_beside_config_from_another_directory(tmp_path):
    cfg = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-m", "ding", "-m", "serial", "-c", cfg, "--train-iter", "30"],
                          cwd=elsewhere, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    run = elsewhere / "beside_run"
    assert (run / "hook_ran").read_text() == "30"  # the hook module was imported and its hook ran at after_run
    saved = (run / "formatted_total_config.py").read_text()
    assert "t22_cartpole" in saved  # the env built was the one the module beside the config registered
    assert json.loads((run / "result").read_text())["train_iter"] == 30


def test_callback_module_found_by_the_trainer_given_a_path(tmp_path, monkeypatch):
    import ding

    cfg = _project(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    monkeypatch.delenv(CONFIG_DIR_ENV, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # what the test's imports add to sys.path is undone
    for name in [m for m in sys.modules if m == "my_project" or m.startswith("my_project.")]:
        monkeypatch.delitem(sys.modules, name)
    with ding.Trainer(cfg, max_train_iter=10) as trainer:
        result = trainer.run()
    assert result["t22_callback"] == 1  # on_train_result of the callback module beside the config ran


def test_import_error_names_the_module_and_the_places_searched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cfgdir"))
    with pytest.raises(RegistryError) as info:
        import_module(["no_such_project_t22.hooks"])
    msg = str(info.value)
    assert "'no_such_project_t22.hooks'" in msg
    assert str(tmp_path / "cfgdir") in msg and f"'{tmp_path}'" in msg


def test_config_directory_comes_before_the_working_directory(tmp_path, monkeypatch):
    for where, mark in (("cfgdir", "config"), ("cwd", "cwd")):
        pkg = tmp_path / where / "t22_order_pkg"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(f"WHERE = {mark!r}\n")
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cfgdir"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "t22_order_pkg", raising=False)
    import_module(["t22_order_pkg"])
    assert sys.modules["t22_order_pkg"].WHERE == "config"
    monkeypatch.delitem(sys.modules, "t22_order_pkg")
