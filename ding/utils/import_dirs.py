"""Where a config's ``import_names`` are looked for: the config file's directory, then the working directory.

A user's hook, callback, env, policy or buffer module usually sits next to the config that names it
(``my_project/hooks.py`` beside ``hook_cfg.py``). ``python my_script.py`` finds such a module because Python puts the
script's directory on ``sys.path``; the ``ding`` command, ``serial_pipeline(path)``, ``Trainer(path)`` and the
parallel roles find it here: :func:`import_module` looks for the top-level package of every name in

1. the directory of the config file read last (:func:`set_config_dir`, called by ``ding.config.read_config``), or
   the directory in the environment variable ``DING_CONFIG_DIR`` (how ``ding -m parallel`` hands its config's
   directory to the role processes, so each role looks in the same places);
2. the working directory;

and only then in the installed packages (``sys.path``). The directory a package is found in is put on ``sys.path``
(as Python does for a script's directory), so the module's own imports, and spawned env workers, find it too. A
module found nowhere is one :class:`RegistryError` naming it and every place searched.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
from collections.abc import Iterable

from .errors import RegistryError
from .import_errors import missing_ding_name

CONFIG_DIR_ENV = "DING_CONFIG_DIR"

_config_dir: str | None = None


def set_config_dir(path: str | None) -> None:
    """Remember the directory of the config file being used (``None``: forget it)."""
    global _config_dir
    _config_dir = os.path.abspath(path) if path else None


def config_dir() -> str | None:
    """The config directory searched first: ``DING_CONFIG_DIR`` if set, else the last one :func:`set_config_dir` got."""
    return os.environ.get(CONFIG_DIR_ENV) or _config_dir


def search_dirs() -> list[str]:
    """The directories searched before the installed packages, in order (no duplicates)."""
    dirs: list[str] = []
    for d in (config_dir(), os.getcwd()):
        if d and os.path.abspath(d) not in dirs:
            dirs.append(os.path.abspath(d))
    return dirs


def _find_in(top: str, dirs: Iterable[str]) -> str | None:
    for d in dirs:
        if os.path.isdir(d) and importlib.machinery.PathFinder.find_spec(top, [d]) is not None:
            return d
    return None


def import_module(names: Iterable[str] | None) -> None:
    """Import every module in ``names`` (e.g. a config's ``import_names``) so its registrations run."""
    for name in names or ():
        top = name.split(".")[0]
        dirs = search_dirs()
        if top not in sys.modules:
            found = _find_in(top, dirs)
            if found is not None and found not in sys.path:
                sys.path.insert(0, found)
                importlib.invalidate_caches()
        try:
            importlib.import_module(name)
        except ImportError as e:
            missing = missing_ding_name(e)  # the user's module needs a ding name that does not exist
            if missing is not None:
                raise RegistryError(f"import_names: cannot import module '{name}': {missing}") from e
            places = ", ".join(f"'{d}'" for d in dirs)
            raise RegistryError(
                f"import_names: cannot import module '{name}' ({e}); looked in the config's directory and the working "
                f"directory ({places}), then the installed packages. Put the module there, install its package, or "
                "add its directory to PYTHONPATH."
            ) from e
