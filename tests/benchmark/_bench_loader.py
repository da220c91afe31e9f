"""The benchmark scripts are run as files (python tests/benchmark/bench_x.py): the smoke tests load them by name."""
from __future__ import annotations

import importlib.util
import os
from types import ModuleType

HERE = os.path.dirname(os.path.abspath(__file__))


def load_bench_module(name: str) -> ModuleType:
    """``tests/benchmark/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
