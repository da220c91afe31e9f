"""Names a package exports from a module above it, imported on first use: ``__getattr__ = lazy_names(__name__,
{"Coordinator": "ding.parallel.coordinator"})`` (PEP 562). It keeps an old import path (``ding.worker.Coordinator``)
without an import-time cycle, and without importing the heavier module for a user who never touches it."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[name]`` (a module path) and returns its ``name``."""
    table = dict(names)

    def __getattr__(name: str) -> Any:
        source = table.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[module], name, value)  # (the next look-up finds it without this function)
        return value

    return __getattr__
