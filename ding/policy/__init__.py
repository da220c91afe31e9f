"""Policies: the Policy base with its mode views, the registry helpers, and the algorithms."""
from .base_policy import (
    Policy,
    PolicyCollectMode,
    PolicyCommandMode,
    PolicyEvalMode,
    PolicyLearnMode,
    create_policy,
    get_policy_cls,
)
from .ddpg import DDPGPolicy
from .dqn import DQNPolicy
from .policy_factory import PolicyFactory, get_random_policy
from .sac import SACPolicy
from .space_check import check_policy_fits_env
from .td3 import TD3Policy

__all__ = [
    "DQNPolicy", "Policy", "PolicyCollectMode", "PolicyCommandMode", "PolicyEvalMode", "PolicyFactory",
    "PolicyLearnMode", "check_policy_fits_env", "create_policy", "get_policy_cls", "get_random_policy",
    "DDPGPolicy", "SACPolicy", "TD3Policy",
]
