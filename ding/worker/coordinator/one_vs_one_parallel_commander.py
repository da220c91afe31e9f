"""DI-engine's import path, re-exported from :mod:`ding.parallel.commanders.one_vs_one`."""
from ding.parallel.commanders.one_vs_one import OneVsOneCommander

__all__ = ["OneVsOneCommander"]
