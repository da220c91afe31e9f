"""Losses, targets, sample builders and exploration schedules shared by the policies."""
from .a2c import a2c_data, a2c_error, a2c_error_continuous, a2c_loss
from .adder import get_nstep_return_data, get_train_sample
from .distribution import action_distribution
from .distributional import categorical_projection, dist_nstep_td_data, dist_nstep_td_error
from .exploration import EPSILON_SCHEDULE_TYPES, EpsilonSchedule, get_epsilon_greedy_fn
from .gae import gae, gae_data
from .offline import advantage_weights, cql_penalty, discrete_cql_penalty, expectile_loss, td3_bc_lambda
from .ppo import ppo_data, ppo_error, ppo_error_continuous, ppo_info, ppo_loss, ppo_policy_loss, ppo_value_loss
from .qac import critic_loss, min_q, qac_td_target, target_policy_smoothing
from .running_stat import RunningMeanStd
from .sac import sac_temperature_loss, squashed_gaussian_mode, squashed_gaussian_sample
from .td import nstep_return, q_nstep_sequence_td_error, q_nstep_td_data, q_nstep_td_error, sequence_nstep_windows
from .value_rescale import value_inv_transform, value_transform

__all__ = [
    "EPSILON_SCHEDULE_TYPES", "EpsilonSchedule", "get_epsilon_greedy_fn", "get_nstep_return_data", "get_train_sample",
    "nstep_return", "q_nstep_td_data", "q_nstep_td_error",
    "categorical_projection", "dist_nstep_td_data", "dist_nstep_td_error", "q_nstep_sequence_td_error",
    "sequence_nstep_windows", "value_inv_transform", "value_transform",
]
# on-policy actor-critic (PPO, A2C)
__all__ += [
    "a2c_data", "a2c_error", "a2c_error_continuous", "a2c_loss", "action_distribution", "gae", "gae_data",
    "ppo_data", "ppo_error", "ppo_error_continuous", "ppo_info", "ppo_loss", "ppo_policy_loss", "ppo_value_loss",
    "RunningMeanStd",
]
# continuous off-policy actor-critic (SAC, DDPG, TD3)
__all__ += [
    "critic_loss", "min_q", "qac_td_target", "sac_temperature_loss", "squashed_gaussian_mode",
    "squashed_gaussian_sample", "target_policy_smoothing",
]
# offline RL (CQL, TD3+BC, IQL)
__all__ += ["advantage_weights", "cql_penalty", "discrete_cql_penalty", "expectile_loss", "td3_bc_lambda"]
# DI-engine's functional names used by its policy files (value TD losses, per-transition GAE, PPO's parts)
from .exploration import create_noise_generator  # noqa: E402
from .gae_samples import get_gae, get_gae_with_default_last_value  # noqa: E402
from .ppo import shape_fn_ppo  # noqa: E402
from .ppo_parts import (  # noqa: E402
    ppo_policy_data,
    ppo_policy_error,
    ppo_policy_error_continuous,
    ppo_value_data,
    ppo_value_error,
)
from .td_lambda import generalized_lambda_returns, td_lambda_data, td_lambda_error  # noqa: E402
from .value_rescale import inv_symlog, symlog  # noqa: E402
from .value_td import (  # noqa: E402
    q_1step_td_data,
    q_1step_td_error,
    q_nstep_td_error_with_rescale,
    q_v_1step_td_data,
    q_v_1step_td_error,
    v_1step_td_data,
    v_1step_td_error,
    v_nstep_td_data,
    v_nstep_td_error,
)

__all__ += [
    "get_gae", "get_gae_with_default_last_value", "ppo_policy_data", "ppo_policy_error",
    "ppo_policy_error_continuous", "ppo_value_data", "ppo_value_error", "q_1step_td_data", "q_1step_td_error",
    "q_nstep_td_error_with_rescale", "q_v_1step_td_data", "q_v_1step_td_error", "v_1step_td_data",
    "v_1step_td_error", "v_nstep_td_data", "v_nstep_td_error",
]
__all__ += ["create_noise_generator", "shape_fn_ppo", "generalized_lambda_returns", "td_lambda_data", "td_lambda_error",
            "inv_symlog", "symlog"]
# DQN variants' TD losses under DI-engine's names (quantile networks, C51 one-step, Munchausen, BDQ, SQL, DQfD)
from .td_quantile import (  # noqa: E402
    fqf_nstep_td_data,
    fqf_nstep_td_error,
    iqn_nstep_td_data,
    iqn_nstep_td_error,
    qrdqn_nstep_td_data,
    qrdqn_nstep_td_error,
)
from .td_variants import (  # noqa: E402
    bdq_nstep_td_error,
    dist_1step_td_data,
    dist_1step_td_error,
    dqfd_nstep_td_data,
    dqfd_nstep_td_error,
    m_q_1step_td_data,
    m_q_1step_td_error,
    q_nstep_sql_td_error,
)

__all__ += ["fqf_nstep_td_data", "fqf_nstep_td_error", "iqn_nstep_td_data", "iqn_nstep_td_error",
            "qrdqn_nstep_td_data", "qrdqn_nstep_td_error", "bdq_nstep_td_error", "dist_1step_td_data",
            "dist_1step_td_error", "dqfd_nstep_td_data", "dqfd_nstep_td_error", "m_q_1step_td_data",
            "m_q_1step_td_error", "q_nstep_sql_td_error"]
