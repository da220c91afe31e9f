from .base_env_manager import BaseEnvManager
from .env_manager_factory import create_env_manager, get_env_manager_cls
from .envpool_env_manager import PoolEnvManager  # registers 'env_pool'; envpool is imported on use
from .manager_utils import EnvState
from .subprocess_env_manager import AsyncSubprocessEnvManager, SyncSubprocessEnvManager
