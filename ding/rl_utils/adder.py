"""Turning a trajectory chunk (list of transitions) into train samples: n-step windows and unroll sequences."""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ding.torch_utils.data_helper import get_null_data
from ding.utils.default_helper import lists_to_dicts


def get_nstep_return_data(transitions: list[dict[str, Any]], nstep: int, gamma: float = 0.99) -> list[dict[str, Any]]:
    """n-step samples for the leading transitions of a chunk whose n-step window is known.

    Each transition is a dict with at least ``obs, next_obs, action, reward, done`` (``done`` = termination) and
    optionally ``truncated`` (episode cut by a time limit). A window starting at transition ``i`` ends at the first of:
    ``i + nstep - 1``, a termination, or a truncation. The sample for ``i`` then holds:

    - ``reward``: float32 (nstep,) -- rewards inside the window, zero after its end;
    - ``next_obs``: the ``next_obs`` of the window's last transition;
    - ``done``: whether the window ended with a termination (then nothing is bootstrapped);
    - ``value_gamma``: ``gamma ** k`` for a window of ``k`` steps, the discount of the bootstrap value (``k < nstep``
      only when a time limit cut the window);
    - every other key of transition ``i`` unchanged (``truncated`` is dropped).

    Windows never cross a chunk's end: the last ``nstep - 1`` transitions of a chunk that does not end the episode are
    NOT returned, so the samples always cover a prefix of ``transitions``. The caller keeps the rest and passes them
    again, followed by newer transitions, on the next call (see docs/policies.md, "the n-step contract").
    """
    if nstep < 1:
        raise ValueError(f"get_nstep_return_data: nstep must be >= 1, got {nstep}")
    n_trans = len(transitions)
    if n_trans == 0:
        return []
    rewards = _stack_rewards(transitions)
    done = np.fromiter((bool(t["done"]) for t in transitions), dtype=bool, count=n_trans)
    truncated = np.fromiter((bool(t.get("truncated", False)) for t in transitions), dtype=bool, count=n_trans)

    index = np.arange(n_trans)
    # First episode boundary (termination or truncation) at or after each index; n_trans when there is none.
    boundary = np.where(done | truncated, index, n_trans)
    next_boundary = np.minimum.accumulate(boundary[::-1])[::-1]
    window_end = np.minimum(index + nstep - 1, next_boundary)
    n_ready = int(np.count_nonzero(window_end < n_trans))  # complete windows form a prefix
    if n_ready == 0:
        return []
    window_end = window_end[:n_ready]
    steps = window_end - index[:n_ready] + 1  # k in [1, nstep]

    # (n_ready, nstep) reward windows, zero past each window's end.
    padded = np.concatenate([rewards, np.zeros(nstep, dtype=np.float32)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, nstep)[:n_ready]
    windows = np.where(np.arange(nstep)[None, :] < steps[:, None], windows, np.float32(0.0))
    value_gamma = np.power(np.float32(gamma), steps).astype(np.float32)

    samples = []
    for i in range(n_ready):
        end = int(window_end[i])
        sample = {k: v for k, v in transitions[i].items() if k != "truncated"}
        sample["reward"] = windows[i]
        sample["next_obs"] = transitions[end]["next_obs"]
        sample["done"] = bool(done[end])
        sample["value_gamma"] = value_gamma[i]
        samples.append(sample)
    return samples


def _stack_rewards(transitions: list[dict[str, Any]]) -> np.ndarray:
    """Rewards as a float32 (T,) array; each must be a scalar or a shape-(1,) array."""
    n_trans = len(transitions)
    try:
        rewards = np.asarray([t["reward"] for t in transitions], dtype=np.float32)
    except ValueError:  # ragged shapes
        rewards = None
    if rewards is None or rewards.size != n_trans:
        shapes = sorted({np.shape(t["reward"]) for t in transitions})
        raise ValueError(f"get_nstep_return_data: each transition's reward must be a scalar or a shape-(1,) array; "
                         f"got shapes {shapes}")
    return rewards.reshape(n_trans)


def get_train_sample(data: list[Any], unroll_len: int, last_fn_type: str = "last",
                     null_transition: dict | None = None) -> list[Any]:
    """Group consecutive samples into sequences of ``unroll_len`` (``unroll_len == 1`` returns ``data`` unchanged).

    A sequence of dict samples is one dict of lists (``{'obs': [o_0, ..., o_{n-1}], ...}``, as DI-engine gives it);
    other samples stay a list. A short final group is ``'last'``: completed in front with copies of the samples
    before it (with null transitions behind it when there are none); ``'null_padding'``: completed behind with null
    transitions; ``'drop'``: dropped. A null transition is a copy of ``null_transition`` or, by default, of the
    group's first sample with zero obs, action and reward, ``done=True`` and ``null=True``.
    """
    if unroll_len < 1:
        raise ValueError(f"get_train_sample: unroll_len must be >= 1, got {unroll_len}")
    if unroll_len == 1:
        return data
    if last_fn_type not in ("last", "drop", "null_padding"):
        raise ValueError(f"get_train_sample: last_fn_type must be 'last', 'drop' or 'null_padding', got "
                         f"{last_fn_type!r}")
    n_full = len(data) // unroll_len
    sequences = [list(data[i * unroll_len:(i + 1) * unroll_len]) for i in range(n_full)]
    residual = list(data[n_full * unroll_len:])
    if residual and last_fn_type != "drop":
        missing = unroll_len - len(residual)
        if last_fn_type == "last" and sequences:
            sequences.append(copy.deepcopy(sequences[-1][-missing:]) + residual)
        else:
            sequences.append(residual + [_null_transition(residual[0], null_transition) for _ in range(missing)])
    if sequences and isinstance(sequences[0][0], dict):
        return [lists_to_dicts(seq, recursive=True) for seq in sequences]
    return sequences


def _zeros_like(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.zeros_like(x)
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if isinstance(x, dict):
        return {k: _zeros_like(v) for k, v in x.items()}
    return type(x)(0) if isinstance(x, (int, float, np.number)) and not isinstance(x, bool) else x


def _null_transition(template: Any, null_transition: dict | None) -> Any:
    """A padding step: a copy of ``null_transition``, or :func:`~ding.torch_utils.get_null_data`'s copy of
    ``template`` with its obs and action zeroed too (see :func:`get_train_sample`)."""
    if null_transition is not None:
        return copy.deepcopy(null_transition)
    if not isinstance(template, dict):
        raise TypeError(f"get_train_sample: padding needs dict samples (or a null_transition), got "
                        f"{type(template).__name__}")
    null = get_null_data(template, 1)[0]
    for key in ("obs", "action"):
        if key in null:
            null[key] = _zeros_like(null[key])
    if "value_gamma" in null:
        null["value_gamma"] = 0.0
    return null
