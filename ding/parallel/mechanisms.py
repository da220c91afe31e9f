"""Parallel mode's speed mechanisms, each on unless ``DING_PARALLEL_OFF=name,...`` names it (for A/B benchmarks
only, so no config key; the variable is inherited by every process a run starts)."""
from __future__ import annotations

import os

from ding.utils import ConfigError

ENV_VAR = "DING_PARALLEL_OFF"

# name -> what is done instead while it is off
MECHANISMS = {
    "role_fork": "`ding -m parallel` exec's a fresh interpreter per role instead of forking the launcher",
    "sample_cache": "the learner keeps no decoded samples: every batch is read from its data files",
}


def turned_off() -> frozenset[str]:
    """The mechanisms ``DING_PARALLEL_OFF`` names (read at each call: a test or a benchmark may set it)."""
    names = frozenset(n.strip() for n in os.environ.get(ENV_VAR, "").split(",") if n.strip())
    unknown = sorted(names - MECHANISMS.keys())
    if unknown:
        raise ConfigError(f"{ENV_VAR}: unknown mechanism {', '.join(map(repr, unknown))}; it names any of "
                          f"{', '.join(MECHANISMS)} (comma-separated), or is unset")
    return names


def is_on(name: str) -> bool:
    """Whether the mechanism ``name`` (a key of :data:`MECHANISMS`) runs in this process."""
    if name not in MECHANISMS:
        raise KeyError(f"{name!r} is not a mechanism of {__name__}: {', '.join(MECHANISMS)}")
    return name not in turned_off()
