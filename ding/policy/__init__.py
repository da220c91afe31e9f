"""Policies: the Policy base with its mode views, the registry helpers, and the algorithms."""
from .a2c import A2CPolicy
from .actor_critic import ActorCriticPolicy
from .base_policy import (
    Policy,
    PolicyCollectMode,
    PolicyCommandMode,
    PolicyEvalMode,
    PolicyLearnMode,
    create_policy,
    get_policy_cls,
)
from .c51 import C51Policy
from .ddpg import DDPGPolicy
from .dqn import DQNPolicy
from .mappo import MAPPOPolicy
from .masac import MASACPolicy
from .policy_factory import PolicyFactory, get_random_policy
from .ppo import PPOPolicy
from .qmix import QMIXPolicy
from .r2d2 import R2D2Policy
from .rainbow import RainbowPolicy
from .sac import SACPolicy
from .space_check import check_policy_fits_env
from .td3 import TD3Policy

__all__ = [
    "DQNPolicy", "Policy", "PolicyCollectMode", "PolicyCommandMode", "PolicyEvalMode", "PolicyFactory",
    "PolicyLearnMode", "check_policy_fits_env", "create_policy", "get_policy_cls", "get_random_policy",
    "C51Policy", "R2D2Policy", "RainbowPolicy",
    "DDPGPolicy", "SACPolicy", "TD3Policy",
]
__all__ += ["A2CPolicy", "ActorCriticPolicy", "PPOPolicy"]
# offline RL and imitation (serial_pipeline_offline)
from .bc import BehaviourCloningPolicy  # noqa: E402
from .cql import CQLPolicy, DiscreteCQLPolicy  # noqa: E402

__all__ += ["BehaviourCloningPolicy", "CQLPolicy", "DiscreteCQLPolicy"]
from .iql import IQLPolicy  # noqa: E402
from .td3_bc import TD3BCPolicy  # noqa: E402

__all__ += ["IQLPolicy", "TD3BCPolicy"]
__all__ += ["MAPPOPolicy", "MASACPolicy", "QMIXPolicy"]
