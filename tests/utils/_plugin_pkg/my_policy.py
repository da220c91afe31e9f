"""A plugin module: importing it registers a name (what a config's import_names relies on)."""
from ding.utils import POLICY_REGISTRY


@POLICY_REGISTRY.register("test_plugin_policy_xyz")
class PluginPolicy:
    pass
