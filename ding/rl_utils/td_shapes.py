"""The ``shape_fn_*`` helpers of DI-engine's accelerated TD losses: the sizes of a loss call, read from its
arguments (``args``, ``kwargs``) as the call was made."""
from __future__ import annotations

from typing import Any, Sequence


def _data_arg(args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """The ``data`` argument of a TD-loss call given as positional ``args`` or keyword ``kwargs``."""
    if args:
        return args[0]
    if "data" not in kwargs:
        raise KeyError(f"shape_fn: the loss call has no 'data' argument (args empty, kwargs {sorted(kwargs)})")
    return kwargs["data"]


def shape_fn_qntd(args: Sequence[Any], kwargs: dict[str, Any]) -> list[int]:
    """``[T, B, N]`` (n-step length, batch, action count) of a :func:`~ding.rl_utils.q_nstep_td_error` call."""
    data = _data_arg(args, kwargs)
    return [data.reward.shape[0], data.q.shape[0], data.q.shape[1]]


def shape_fn_qntd_rescale(args: Sequence[Any], kwargs: dict[str, Any]) -> list[int]:
    """:func:`shape_fn_qntd` of a :func:`~ding.rl_utils.q_nstep_td_error_with_rescale` call."""
    return shape_fn_qntd(args, kwargs)


def shape_fn_dntd(args: Sequence[Any], kwargs: dict[str, Any]) -> list[int]:
    """``[T, B, N, n_atom]`` of a :func:`~ding.rl_utils.dist_nstep_td_error` call (``n_atom`` its fifth positional
    argument or keyword)."""
    data = _data_arg(args, kwargs)
    n_atom = args[4] if len(args) > 4 else kwargs["n_atom"]
    return [data.reward.shape[0], data.dist.shape[0], data.dist.shape[1], n_atom]


def shape_fn_td_lambda(args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """The reward size of a :func:`~ding.rl_utils.td_lambda_error` call, as DI-engine reports it: the whole shape
    ``(T, B)`` when ``data`` is positional, its length ``T`` when ``data`` is a keyword."""
    if args:
        return args[0].reward.shape
    return _data_arg(args, kwargs).reward.shape[0]
