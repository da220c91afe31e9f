"""DI-engine's import path, re-exported from :mod:`ding.parallel.commanders.solo`."""
from ding.parallel.commanders.solo import SoloCommander

__all__ = ["SoloCommander"]
