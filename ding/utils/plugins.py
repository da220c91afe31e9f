"""Components outside a registry's own module register through the ``ding.plugins`` entry-point group.

A package declares in its ``pyproject.toml``::

    [project.entry-points."ding.plugins"]
    my-envs = "my_pkg.envs"          # importing the module registers its components

ding imports every declared module once, when a registry lookup misses (and for ``ding -q``). ding's own packages
and the dizoo envs are declared the same way, so no ding module names a package above it or the env zoo. Entry
points are read from the installed package metadata: after adding one, reinstall (``pip install -e .``).
"""
from __future__ import annotations

import logging
from importlib.metadata import entry_points

PLUGIN_GROUP = "ding.plugins"
_logger = logging.getLogger(__name__)
_loaded: set[str] = set()  # "name = module" of every entry point imported (or being imported)
_failed: dict[str, str] = {}  # entry point -> the error its import raised


def load_plugins() -> dict[str, str]:
    """Import the module of every ``ding.plugins`` entry point not imported yet; return the ones that failed.

    A plugin that fails to import is reported (a warning naming it and its error) and skipped, so one broken package
    does not hide every other component; lookups that still miss list the failures.
    """
    for ep in entry_points(group=PLUGIN_GROUP):
        key = f"{ep.name} = {ep.value}"
        if key in _loaded or key in _failed:
            continue
        _loaded.add(key)  # before importing: a plugin whose import looks a name up does not load itself again
        try:
            ep.load()
        except Exception as e:  # noqa: BLE001 -- third-party code can raise anything; it is reported, not hidden
            _loaded.discard(key)
            _failed[key] = f"{type(e).__name__}: {e}"
            _logger.warning("ding plugin '%s' (entry point group %s) failed to import: %s. Its components are not "
                            "registered; fix or uninstall the package that declares it.", key, PLUGIN_GROUP,
                            _failed[key])
    return dict(_failed)


def failed_plugins() -> dict[str, str]:
    """Entry points whose import failed so far: ``{'name = module': 'Error: message'}``."""
    return dict(_failed)
