"""A user's policy plugin, loaded by tests through a config's ``import_names``."""
from ding.policy import DQNPolicy
from ding.utils import POLICY_REGISTRY


@POLICY_REGISTRY.register("test_plugin_dqn")
class PluginDQNPolicy(DQNPolicy):
    config = dict(type="test_plugin_dqn", plugin_flag=True)
