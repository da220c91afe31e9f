"""A plugin env manager, registered on import (for the import_names test)."""
from ding.envs import BaseEnvManager
from ding.utils import ENV_MANAGER_REGISTRY


@ENV_MANAGER_REGISTRY.register("test_custom_manager")
class CustomManager(BaseEnvManager):
    pass
