"""Load ``main_config`` / ``create_config`` (/ ``system_config``) from a ``.py`` config file given by path."""
from __future__ import annotations

import copy
import importlib.util
import itertools
import os
import sys
import traceback
import types
from typing import Any, Mapping

from easydict import EasyDict

from ding.utils import ConfigError, set_config_dir

_counter = itertools.count()


def _exec_config_file(path: str) -> dict[str, Any]:
    """Run the file as a throw-away module and return its namespace.

    The module is registered in ``sys.modules`` (under a private name, never ``__main__``, so an
    ``if __name__ == '__main__':`` block does not run) and its directory is put on ``sys.path`` only while the file
    runs; both are undone afterwards. Modules the file imports stay imported, as with any import: they may register
    components that the config's ``import_names`` refer to later.
    """
    path = os.fspath(path)
    abspath = os.path.abspath(path)
    if not os.path.isfile(abspath):
        raise ConfigError(
            f"config file '{path}' not found (looked for {abspath}). Check the path and working directory."
        )
    if not abspath.endswith(".py"):
        raise ConfigError(f"config file '{path}': only Python (.py) config files are supported")
    with open(abspath, encoding="utf-8") as f:
        source = f.read()
    # Compiled here rather than by the import system's loader: no bytecode cache, so a config file rewritten within
    # the same second (same mtime and size) is never read from a stale .pyc.
    try:
        code = compile(source, abspath, "exec")
    except SyntaxError as e:
        text = f": {e.text.strip()}" if e.text and e.text.strip() else ""
        raise ConfigError(f"config file '{path}', line {e.lineno}: syntax error ({e.msg}){text}") from e
    stem = os.path.splitext(os.path.basename(abspath))[0]
    name = f"_ding_config_{next(_counter)}_{stem}"
    spec = importlib.util.spec_from_file_location(name, abspath)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    directory = os.path.dirname(abspath)
    sys.path.insert(0, directory)
    sys.modules[name] = module  # some code (dataclasses, pickle) looks its module up while it runs
    try:
        exec(code, module.__dict__)
    except Exception as e:  # reported with the file and line it came from; the original error is chained
        raise ConfigError(_run_failure(path, abspath, e)) from e
    finally:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        try:
            sys.path.remove(directory)  # removes the first occurrence: the one inserted above
        except ValueError:
            pass  # the file itself took it off sys.path
    return module.__dict__


def _run_failure(path: str, abspath: str, error: Exception) -> str:
    """``config file 'p.py', line 3: ModuleNotFoundError: ...`` (+ where it was raised, if in another file)."""
    frames = traceback.extract_tb(error.__traceback__)
    in_file = [f for f in frames if os.path.abspath(f.filename) == abspath]
    line = f", line {in_file[-1].lineno}" if in_file else ""
    msg = f"config file '{path}'{line}: {type(error).__name__}: {error}"
    if frames and os.path.abspath(frames[-1].filename) != abspath:
        msg += f" (raised in {frames[-1].filename}, line {frames[-1].lineno})"
    if isinstance(error, ImportError):
        msg += ". Is the package installed, or the module's directory on PYTHONPATH?"
    return msg


def _section(namespace: Mapping[str, Any], name: str, path: str, required: bool) -> EasyDict:
    if name not in namespace:
        if not required:
            return EasyDict()
        raise ConfigError(
            f"config file '{path}' defines no `{name}`. A config file is a Python module that assigns "
            f"`main_config = dict(...)` and `create_config = dict(...)`"
            + (" and `system_config = dict(...)` (parallel mode)." if name == "system_config" else ".")
        )
    value = namespace[name]
    if not isinstance(value, Mapping):
        raise ConfigError(f"config file '{path}': `{name}` must be a dict or EasyDict, got {type(value).__name__}")
    return EasyDict(copy.deepcopy(dict(value)))


def read_config(path: str, named_after_file: bool = False) -> tuple[EasyDict, EasyDict]:
    """Return ``(main_config, create_config)`` from a ``.py`` config file (copies; an absent create_config is empty).

    ``named_after_file``: a file without ``main_config`` whose dict is named after the file (DI-engine's demo
    files: ``league_demo_ppo_config`` in ``league_demo_ppo_config.py``) gives that dict as the main config.
    """
    namespace = _exec_config_file(path)
    set_config_dir(os.path.dirname(os.path.abspath(path)))  # its import_names are looked for there first
    main_name = "main_config"
    if named_after_file and main_name not in namespace:
        stem = os.path.splitext(os.path.basename(path))[0]
        main_name = stem if stem in namespace else main_name
    return _section(namespace, main_name, path, True), _section(namespace, "create_config", path, False)


def read_config_with_system(path: str) -> tuple[EasyDict, EasyDict, EasyDict]:
    """Return ``(main_config, create_config, system_config)`` from a parallel-mode config file."""
    namespace = _exec_config_file(path)
    set_config_dir(os.path.dirname(os.path.abspath(path)))
    return (
        _section(namespace, "main_config", path, True),
        _section(namespace, "create_config", path, False),
        _section(namespace, "system_config", path, True),
    )


def read_config_directly(path: str) -> dict[str, Any]:
    """Every top-level value a ``.py`` config file defines (not its imports, functions or classes, nor ``_`` names):
    DI-engine's ``read_config_directly``, for files that name their dicts freely."""
    if not os.fspath(path).endswith(".py"):
        raise ConfigError(f"read_config_directly: '{path}' is not a .py config file")
    namespace = _exec_config_file(path)
    return {k: v for k, v in namespace.items()
            if not k.startswith("_") and not isinstance(v, (types.ModuleType, types.FunctionType, type))}
