"""Commanders: the coordinator asks one what task to hand out next and tells it what came back."""
from ding.parallel.commanders.base import (
    BaseCommander,
    LimitedSpaceContainer,
    create_parallel_commander,
    get_parallel_commander_cls,
)
from ding.parallel.commanders.one_vs_one import OneVsOneCommander
from ding.parallel.commanders.solo import SoloCommander

__all__ = ["BaseCommander", "LimitedSpaceContainer", "create_parallel_commander", "get_parallel_commander_cls",
           "SoloCommander", "OneVsOneCommander"]
