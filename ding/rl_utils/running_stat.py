"""``RunningMeanStd`` lives in ``ding.utils`` (DI-engine's import path); re-exported here."""
from ding.utils.running_mean_std import RunningMeanStd

__all__ = ["RunningMeanStd"]
