"""One generic registry class; the instances live in ``registry_factory``."""
from __future__ import annotations

import difflib
from typing import Any, Callable, Iterable

from .errors import RegistryError, RegistryNameTaken
from .import_dirs import import_module
from .plugins import failed_plugins, load_plugins


class Registry(dict):
    """A name -> object table usable as a decorator or a plain call.

    >>> REG = Registry('policy')
    >>> @REG.register('dqn')
    ... class DQNPolicy: ...
    >>> REG.register('dqn2', DQNPolicy)  # call form
    """

    def __init__(self, name: str = "registry", *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = name

    def register(self, module_name: str | None = None, module: Any = None, force_overwrite: bool = False):
        if module is not None:
            self._add(module_name or module.__name__, module, force_overwrite)
            return module

        def decorator(obj: Any) -> Any:
            self._add(module_name or obj.__name__, obj, force_overwrite)
            return obj

        return decorator

    def _add(self, name: str, obj: Any, force_overwrite: bool) -> None:
        if not isinstance(name, str) or not name:
            raise RegistryError(f"{self.name} registry: a name must be a non-empty string, got {name!r}")
        if name in self and not force_overwrite and self[name] is not obj:
            old = self[name]
            raise RegistryNameTaken(
                f"{self.name} registry: name '{name}' is already taken by "
                f"{getattr(old, '__module__', '?')}.{getattr(old, '__qualname__', old)}; "
                "choose another name or pass force_overwrite=True"
            )
        self[name] = obj

    def get(self, name: str, default: Any = ..., where: str | None = None) -> Any:
        """Look ``name`` up; an unknown name raises with close matches and the known names.

        Without a ``default``, a miss first imports the installed plugins (:func:`ding.utils.load_plugins`), which
        register ding's own components and the env zoo's, then looks again.
        """
        if name in self:
            return dict.__getitem__(self, name)
        if default is not ...:
            return default
        load_plugins()
        if name in self:
            return dict.__getitem__(self, name)
        raise RegistryError(self.unknown_message(name, where))

    def unknown_message(self, name: Any, where: str | None = None) -> str:
        known = sorted(self.keys())
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        loc = f"{where}: " if where else ""
        failed = "; ".join(f"{k} ({v})" for k, v in failed_plugins().items())
        broken = f" Plugins that failed to import: {failed}." if failed else ""
        return (
            f"{loc}unknown {self.name} type {name!r}.{hint} Known {self.name} types: {', '.join(known) or '(none)'}. "
            f"If it comes from your own module, list that module in the config's `import_names`.{broken}"
        )

    def build(self, obj_type: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(obj_type)(*args, **kwargs)

    def query(self) -> list[str]:
        return sorted(self.keys())

    def query_details(self) -> dict[str, str]:
        return {k: f"{getattr(v, '__module__', '?')}.{getattr(v, '__qualname__', v)}" for k, v in sorted(self.items())}

    def __repr__(self) -> str:
        return f"Registry({self.name!r}, {self.query()})"


def lookup(
    registry: Registry, name: str, import_names: Iterable[str] | None = None, where: str | None = None
) -> Callable:
    """Import ``import_names`` then return ``registry[name]`` with a helpful error."""
    import_module(import_names)
    return registry.get(name, where=where)
