"""The action distribution a policy head's output describes: categorical logits or a diagonal Gaussian."""
from __future__ import annotations

from typing import Any

import torch
from torch.distributions import Categorical, Distribution, Independent, Normal


def action_distribution(logit: Any) -> Distribution:
    """``Categorical`` over (B, A) logits, or a diagonal ``Normal`` (log-probs summed over action dims) for a
    ``{'mu', 'sigma'}`` dict. Argument validation is off (it costs more than the math for small batches)."""
    if isinstance(logit, torch.Tensor):
        return Categorical(logits=logit, validate_args=False)
    if isinstance(logit, dict) and "mu" in logit and "sigma" in logit:
        return Independent(Normal(logit["mu"], logit["sigma"], validate_args=False), 1, validate_args=False)
    got = sorted(logit) if isinstance(logit, dict) else type(logit).__name__
    raise TypeError(f"action_distribution: expected (B, A) logits or a dict with 'mu' and 'sigma', got {got}")
