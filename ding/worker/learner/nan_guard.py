"""What the learner does when an update produces NaN/Inf: stop with a clear error, or warn and go on.

Either way no checkpoint of non-finite parameters is written, so the last finite checkpoint stays the newest.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import torch

from ding.utils import ConfigError, TrainingError

NAN_POLICIES = ("raise", "warn")
_WARN_EVERY = 100  # in 'warn' mode, repeat the warning at most once per this many non-finite updates
_FIX = ("check the env's rewards and observations for NaN/Inf, or lower policy.learn.learning_rate; "
        "policy.learn.learner.nan_policy='warn' trains on instead")


class NonFiniteGuard:
    """Checks each update's logged scalars and each checkpoint's parameters for NaN/Inf."""

    def __init__(self, policy: str, logger: logging.Logger) -> None:
        if policy not in NAN_POLICIES:
            raise ConfigError(f"learner.nan_policy: {policy!r} is not 'raise' or 'warn'")
        self.policy = policy
        self._logger = logger
        self._count = 0

    def check_output(self, scalars: Mapping[str, float], train_iter: int, last_ckpt: str | None) -> None:
        """``scalars`` are the values update ``train_iter`` logged (its loss terms among them)."""
        bad = {k: v for k, v in scalars.items() if not math.isfinite(v)}
        if not bad:
            return
        terms = ", ".join(f"{k}={v}" for k, v in bad.items())
        kept = f"the last checkpoint written is {last_ckpt}" if last_ckpt else "this learner wrote no checkpoint yet"
        if self.policy == "raise":
            raise TrainingError(f"train iteration {train_iter}: non-finite loss {terms}. Training stopped; no "
                                f"checkpoint of these parameters was written ({kept}). To fix: {_FIX}")
        self._count += 1
        if self._count == 1 or self._count % _WARN_EVERY == 0:
            self._logger.warning(f"train iteration {train_iter}: non-finite loss {terms} ({self._count} such "
                                 f"iteration(s) so far; nan_policy='warn', training goes on)")

    def check_state(self, state: Mapping[str, Any], path: str, last_ckpt: str | None) -> bool:
        """Whether ``state`` (a policy state dict) may be written to ``path``: False (or TrainingError with
        ``'raise'``) when a parameter is NaN/Inf."""
        bad = non_finite_tensors(state)
        if not bad:
            return True
        kept = f"{last_ckpt} stays the newest" if last_ckpt else "this learner wrote no checkpoint yet"
        msg = (f"not writing checkpoint {path}: parameters {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} "
               f"are NaN/Inf ({kept})")
        if self.policy == "raise":
            raise TrainingError(f"{msg}. To fix: {_FIX}")
        self._logger.warning(msg)
        return False


def non_finite_tensors(state: Mapping[str, Any]) -> list[str]:
    """``'<entry>.<name>'`` of every floating-point tensor with a NaN/Inf in the module state dicts of ``state``
    (its entries whose values are all tensors, such as 'model' and 'target_model'; optimizer state is skipped)."""
    bad = []
    for entry, sub in state.items():
        if not isinstance(sub, Mapping) or not sub or not all(isinstance(t, torch.Tensor) for t in sub.values()):
            continue
        bad += [f"{entry}.{name}" for name, t in sub.items()
                if t.is_floating_point() and not bool(torch.isfinite(t).all())]
    return bad
