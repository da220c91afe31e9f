"""ding: a reinforcement-learning platform with DI-engine's worker-component design.

``ding.Trainer`` (train from Python, one round at a time) and ``ding.load_policy`` (act with a trained policy) are
imported on first use, so ``import ding`` stays light.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Trainer", "load_policy", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Trainer":
        from ding.entry.trainer import Trainer

        return Trainer
    if name == "load_policy":
        from ding.entry.deploy import load_policy

        return load_policy
    raise AttributeError(f"module 'ding' has no attribute {name!r}")
