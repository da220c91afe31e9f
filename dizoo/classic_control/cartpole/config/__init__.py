"""CartPole configs, importable as DI-engine's users import them (``from dizoo.classic_control.cartpole.config import
cartpole_dqn_config, cartpole_dqn_create_config``)."""
from .cartpole_a2c_config import cartpole_a2c_config, cartpole_a2c_create_config
from .cartpole_c51_config import cartpole_c51_config, cartpole_c51_create_config
from .cartpole_dqn_config import cartpole_dqn_config, cartpole_dqn_create_config
from .cartpole_dqn_priority_config import cartpole_dqn_priority_config, cartpole_dqn_priority_create_config
from .cartpole_ppo_config import cartpole_ppo_config, cartpole_ppo_create_config
from .cartpole_r2d2_config import cartpole_r2d2_config, cartpole_r2d2_create_config
from .cartpole_rainbow_config import cartpole_rainbow_config, cartpole_rainbow_create_config

__all__ = ["cartpole_a2c_config", "cartpole_a2c_create_config", "cartpole_c51_config", "cartpole_c51_create_config",
           "cartpole_dqn_config", "cartpole_dqn_create_config", "cartpole_dqn_priority_config",
           "cartpole_dqn_priority_create_config", "cartpole_ppo_config", "cartpole_ppo_create_config",
           "cartpole_r2d2_config", "cartpole_r2d2_create_config", "cartpole_rainbow_config",
           "cartpole_rainbow_create_config"]
