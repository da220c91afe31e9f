"""Registry: decorator and call forms, duplicates, unknown names with suggestions, import_names."""
from __future__ import annotations

import pytest

from ding.utils import (
    ALL_REGISTRIES,
    POLICY_REGISTRY,
    Registry,
    RegistryError,
    RegistryNameTaken,
    import_module,
    lookup,
)


def test_decorator_and_call_forms():
    reg = Registry("widget")

    @reg.register("a")
    class A:
        pass

    def make_b():
        return "b"

    reg.register("b", make_b)
    assert reg.get("a") is A and reg.get("b") is make_b
    assert reg.build("b") == "b"
    assert reg.query() == ["a", "b"]


def test_default_name_is_the_object_name():
    reg = Registry("widget")

    @reg.register()
    class Gadget:
        pass

    assert reg.get("Gadget") is Gadget


def test_duplicate_name_is_an_error_unless_forced():
    reg = Registry("widget")
    reg.register("a", int)
    with pytest.raises(RegistryError, match="widget registry: name 'a' is already taken by builtins.int"):
        reg.register("a", float)
    with pytest.raises(AssertionError, match="already taken"):  # DI-engine's error type, for code catching it
        reg.register("a", float)
    with pytest.raises(RegistryNameTaken):
        reg.register("a")(type("A1", (), {}))
    reg.register("a", float, force_overwrite=True)
    assert reg.get("a") is float
    reg.register("a", float)  # registering the same object again is harmless (module re-import)


def test_unknown_name_suggests_close_matches_and_lists_known():
    reg = Registry("policy")
    for name in ("dqn", "ppo", "sac"):
        reg.register(name, object)
    with pytest.raises(RegistryError, match=r"unknown policy type 'dqm'\. Did you mean 'dqn'\?.*Known policy "
                                            r"types: dqn, ppo, sac.*import_names"):
        reg.get("dqm")
    with pytest.raises(RegistryError, match=r"policy\.type: unknown policy type 'zzz'\. Known"):
        reg.get("zzz", where="policy.type")
    assert reg.get("zzz", default=None) is None


def test_import_names_loads_plugin_modules():
    assert "test_plugin_policy_xyz" not in POLICY_REGISTRY
    cls = lookup(POLICY_REGISTRY, "test_plugin_policy_xyz", import_names=["tests.utils._plugin_pkg.my_policy"])
    assert cls.__name__ == "PluginPolicy"
    POLICY_REGISTRY.pop("test_plugin_policy_xyz")


def test_import_names_with_a_bad_module():
    with pytest.raises(RegistryError, match="import_names: cannot import module 'no_such_pkg.plugin'"):
        import_module(["no_such_pkg.plugin"])


def test_every_registry_is_listed():
    for name in ("policy", "env", "env_manager", "model", "buffer", "serial_collector", "serial_evaluator", "learner",
                 "comm_learner", "comm_collector", "parallel_collector", "parallel_commander"):
        assert name in ALL_REGISTRIES
