"""Losses, targets, sample builders and exploration schedules shared by the policies."""
from .adder import get_nstep_return_data, get_train_sample
from .distributional import categorical_projection, dist_nstep_td_data, dist_nstep_td_error
from .exploration import EPSILON_SCHEDULE_TYPES, EpsilonSchedule, get_epsilon_greedy_fn
from .td import nstep_return, q_nstep_sequence_td_error, q_nstep_td_data, q_nstep_td_error, sequence_nstep_windows
from .value_rescale import value_inv_transform, value_transform

__all__ = [
    "EPSILON_SCHEDULE_TYPES", "EpsilonSchedule", "get_epsilon_greedy_fn", "get_nstep_return_data", "get_train_sample",
    "nstep_return", "q_nstep_td_data", "q_nstep_td_error",
    "categorical_projection", "dist_nstep_td_data", "dist_nstep_td_error", "q_nstep_sequence_td_error",
    "sequence_nstep_windows", "value_inv_transform", "value_transform",
]
