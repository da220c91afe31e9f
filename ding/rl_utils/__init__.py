"""Losses, targets, sample builders and exploration schedules shared by the policies."""
from .adder import get_nstep_return_data, get_train_sample
from .exploration import EPSILON_SCHEDULE_TYPES, EpsilonSchedule, get_epsilon_greedy_fn
from .qac import critic_loss, min_q, qac_td_target, target_policy_smoothing
from .sac import sac_temperature_loss, squashed_gaussian_mode, squashed_gaussian_sample
from .td import nstep_return, q_nstep_td_data, q_nstep_td_error

__all__ = [
    "EPSILON_SCHEDULE_TYPES", "EpsilonSchedule", "get_epsilon_greedy_fn", "get_nstep_return_data", "get_train_sample",
    "nstep_return", "q_nstep_td_data", "q_nstep_td_error",
    "critic_loss", "min_q", "qac_td_target", "sac_temperature_loss", "squashed_gaussian_mode",
    "squashed_gaussian_sample", "target_policy_smoothing",
]
