"""DI-engine's ``ding.entry.utils``: the warm-up helpers of a hand-built loop (kept in :mod:`ding.engine.warm_up`)."""
from ding.engine.warm_up import mark_not_expert, mark_warm_up, random_collect

__all__ = ["random_collect", "mark_not_expert", "mark_warm_up"]
