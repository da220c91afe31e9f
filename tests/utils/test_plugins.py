"""The ding.plugins entry-point group: a registry miss imports the installed plugins (ding's own packages and the env
zoo among them); a broken plugin is reported by name and does not hide the others."""
from __future__ import annotations

import logging
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points

import pytest

from ding.utils import ENV_REGISTRY, PLUGIN_GROUP, Registry, RegistryError, load_plugins
from ding.utils import plugins as plugins_module


def test_the_package_declares_its_components_and_the_zoo():
    declared = {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    assert declared["ding-worker"] == "ding.worker"
    assert declared["dizoo-cartpole"] == "dizoo.classic_control.cartpole.envs"


def test_a_lookup_miss_in_a_fresh_process_finds_zoo_envs_and_builtin_workers():
    code = """
import sys
from ding.utils import ENV_REGISTRY, LEARNER_REGISTRY
assert "dizoo" not in sys.modules and "ding.worker" not in sys.modules
print(ENV_REGISTRY.get("cartpole").__module__, LEARNER_REGISTRY.get("base").__module__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["dizoo.classic_control.cartpole.envs.cartpole_env",
                                  "ding.worker.learner.base_learner"]


@pytest.fixture
def broken_plugin(monkeypatch):
    """One extra, broken entry point beside the installed ones; the loader's memory is restored afterwards."""
    broken = EntryPoint(name="broken-thing", value="no_such_module_for_ding_tests", group=PLUGIN_GROUP)
    installed = list(entry_points(group=PLUGIN_GROUP))
    monkeypatch.setattr(plugins_module, "entry_points", lambda group: [*installed, broken])
    monkeypatch.setattr(plugins_module, "_failed", {})
    return broken


def test_a_broken_plugin_is_named_and_the_others_still_load(broken_plugin, caplog):
    with caplog.at_level(logging.WARNING, logger="ding.utils.plugins"):
        failed = load_plugins()
    assert list(failed) == ["broken-thing = no_such_module_for_ding_tests"]
    assert "ModuleNotFoundError" in failed["broken-thing = no_such_module_for_ding_tests"]
    assert "ding plugin 'broken-thing = no_such_module_for_ding_tests'" in caplog.text
    assert "fix or uninstall the package that declares it" in caplog.text
    assert ENV_REGISTRY.get("cartpole") is not None
    with pytest.raises(RegistryError, match=r"unknown toy type 'x'.*Plugins that failed to import: broken-thing = "
                                            r"no_such_module_for_ding_tests \(ModuleNotFoundError"):
        Registry("toy").get("x")
