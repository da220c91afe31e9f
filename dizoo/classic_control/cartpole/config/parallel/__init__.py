"""DI-engine's names of this package, imported on first use: an eager import of ``cartpole_dqn_config`` here would make
``python -m dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config`` warn that the module was imported
before it ran."""
from __future__ import annotations

import importlib
from typing import Any

_NAMES = ("cartpole_dqn_config", "cartpole_dqn_create_config", "cartpole_dqn_system_config")


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        module = importlib.import_module(f"{__name__}.cartpole_dqn_config")
        for n in _NAMES:  # as the eager import did: the config dict, not the submodule, under its name
            globals()[n] = getattr(module, n)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
