"""Pendulum configs, importable as DI-engine's users import them (``from dizoo.classic_control.pendulum.config import
pendulum_sac_config, pendulum_sac_create_config``)."""
from .pendulum_ddpg_config import pendulum_ddpg_config, pendulum_ddpg_create_config
from .pendulum_ppo_config import pendulum_ppo_config, pendulum_ppo_create_config
from .pendulum_sac_config import pendulum_sac_config, pendulum_sac_create_config
from .pendulum_td3_config import pendulum_td3_config, pendulum_td3_create_config

__all__ = ["pendulum_ddpg_config", "pendulum_ddpg_create_config", "pendulum_ppo_config", "pendulum_ppo_create_config",
           "pendulum_sac_config", "pendulum_sac_create_config", "pendulum_td3_config", "pendulum_td3_create_config"]
