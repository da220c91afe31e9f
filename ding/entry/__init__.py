"""The doors into ding: ``Trainer``, ``serial_pipeline``, ``serial_pipeline_onpolicy``, ``serial_pipeline_battle``,
``parallel_pipeline``, ``eval``, ``load_policy``, ``tune`` and the ``ding`` command.

The names are imported on first use (PEP 562), so ``ding --help`` and ``ding -m plot`` start without torch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "eval": ".application_entry",
    "LoadedPolicy": ".deploy",
    "load_policy": ".deploy",
    "parallel_pipeline": ".parallel_entry",
    "serial_pipeline": ".serial_entry",
    "serial_pipeline_onpolicy": ".serial_entry_onpolicy",
    "serial_pipeline_battle": ".serial_entry_battle",
    "Trainer": ".trainer",
    "tune": ".tune_entry",
    "serial_pipeline_offline": ".serial_entry_offline",
    "collect_demo_data": ".serial_entry_offline",
}
__all__ = sorted(_WHERE)

if TYPE_CHECKING:
    from .application_entry import eval
    from .deploy import LoadedPolicy, load_policy
    from .parallel_entry import parallel_pipeline
    from .serial_entry import serial_pipeline
    from .serial_entry_battle import serial_pipeline_battle
    from .serial_entry_offline import collect_demo_data, serial_pipeline_offline
    from .serial_entry_onpolicy import serial_pipeline_onpolicy
    from .trainer import Trainer
    from .tune_entry import tune


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'ding.entry' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value
