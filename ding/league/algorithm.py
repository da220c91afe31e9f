"""Opponent-selection weightings: prioritized fictitious self-play (PFSP) and uniform choice."""
from __future__ import annotations

from typing import Callable

import numpy as np

# Each maps the launching player's win rates against the candidates to unnormalised priorities.
# 'squared' and 'linear' favour the opponents it loses to (AlphaStar's f_hard with p=2 and p=1); 'variance' favours
# opponents of similar strength (win rate near 0.5).
PFSP_WEIGHTINGS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "squared": lambda x: (1.0 - x) ** 2,
    "variance": lambda x: x * (1.0 - x),
    "linear": lambda x: 1.0 - x,
}


def pfsp(win_rates: np.ndarray, weighting: str) -> np.ndarray:
    """Selection probabilities over the candidates given the win rates against them (each in [0, 1]).

    When every priority is zero (e.g. 'squared' against opponents all beaten with win rate 1), the choice is uniform:
    there is no preference to express, and a distribution must still come out.
    """
    if weighting not in PFSP_WEIGHTINGS:
        raise ValueError(f"pfsp: unknown weighting {weighting!r}; choose one of {sorted(PFSP_WEIGHTINGS)}")
    rates = np.asarray(win_rates, dtype=np.float64)
    if rates.ndim != 1 or rates.shape[0] == 0:
        raise ValueError(f"pfsp: win_rates must be a non-empty 1-d array (one per candidate), got shape {rates.shape}")
    if not np.all(np.isfinite(rates)) or rates.min() < 0.0 or rates.max() > 1.0:
        raise ValueError(f"pfsp: win rates must lie in [0, 1], got {rates.tolist()}")
    weights = PFSP_WEIGHTINGS[weighting](rates)
    total = weights.sum()
    if total <= 1e-12:
        return np.full_like(rates, 1.0 / len(rates))
    return weights / total


def uniform(win_rates: np.ndarray) -> np.ndarray:
    """Equal probability for every candidate, whatever the win rates."""
    rates = np.asarray(win_rates, dtype=np.float64)
    if rates.ndim != 1 or rates.shape[0] == 0:
        raise ValueError(f"uniform: win_rates must be a non-empty 1-d array, got shape {rates.shape}")
    return np.full_like(rates, 1.0 / len(rates))
