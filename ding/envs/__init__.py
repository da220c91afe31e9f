from .env import (
    BaseEnv,
    BaseEnvTimestep,
    DingEnvWrapper,
    InvalidActionError,
    create_env,
    get_env_cls,
    get_vec_env_setting,
    scale_action,
)
from .env_manager import (
    AsyncSubprocessEnvManager,
    BaseEnvManager,
    EnvState,
    SyncSubprocessEnvManager,
    create_env_manager,
    get_env_manager_cls,
)
