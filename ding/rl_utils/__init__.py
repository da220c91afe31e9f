"""Losses, targets, sample builders and exploration schedules shared by the policies."""
from .adder import get_nstep_return_data, get_train_sample
from .exploration import EPSILON_SCHEDULE_TYPES, EpsilonSchedule, get_epsilon_greedy_fn
from .td import nstep_return, q_nstep_td_data, q_nstep_td_error

__all__ = [
    "EPSILON_SCHEDULE_TYPES", "EpsilonSchedule", "get_epsilon_greedy_fn", "get_nstep_return_data", "get_train_sample",
    "nstep_return", "q_nstep_td_data", "q_nstep_td_error",
]
