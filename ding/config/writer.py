"""Write configs back as readable ``.py`` files that :func:`ding.config.read_config` loads exactly."""
from __future__ import annotations

import importlib
import inspect
import keyword
import math
import os
import types
from typing import Any, Mapping

import numpy as np

from ding.utils import ConfigError, atomic_write_text

_INDENT = "    "


class _Renderer:
    """Turns a config value into Python source. ``call_style`` writes sections as ``dict(key=value, ...)``."""

    def __init__(self, call_style: bool, where: str) -> None:
        self.call_style = call_style
        self.where = where
        self.needs_numpy = False
        self.needs_import_module = False
        self._active: set[int] = set()

    def render(self, value: Any, path: str, depth: int = 0) -> str:
        if isinstance(value, np.ndarray | np.generic):  # before float: np.float64 is a float subclass
            return self._numpy(value, path)
        if value is None or isinstance(value, (bool, str, bytes)):
            return repr(value)
        if isinstance(value, int):
            return repr(int(value))
        if isinstance(value, float):
            return _float_source(float(value))
        if isinstance(value, (Mapping, list, tuple, set, frozenset)):
            if id(value) in self._active:
                raise ConfigError(f"{path}: the config refers to itself (a cycle); it cannot be written ({self.where})")
            self._active.add(id(value))
            try:
                if isinstance(value, Mapping):
                    return self._mapping(value, path, depth)
                if isinstance(value, (set, frozenset)):
                    return self._set(value, path, depth)
                return self._sequence(value, path, depth)
            finally:
                self._active.discard(id(value))
        if inspect.isclass(value) or isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            return self._reference(value, path)
        if _is_default_instance(value):  # e.g. activation=torch.nn.Tanh() in DI-engine's configs
            return self._reference(type(value), path) + "()"
        raise ConfigError(
            f"{path}: cannot write a {type(value).__module__}.{type(value).__qualname__} value ({_short(value)}) to a "
            f"config file ({self.where}). Config values must be numbers, strings, bools, None, lists, tuples, dicts, "
            "numpy values, importable classes/functions, or instances their class makes without arguments (like "
            "torch.nn.Tanh()); use a name the component understands instead, or compile with save_cfg=False."
        )

    def _mapping(self, value: Mapping, path: str, depth: int) -> str:
        for key in value:
            if not isinstance(key, str):
                raise ConfigError(f"{path}: config keys must be strings, got {key!r} ({self.where})")
        call = self.call_style and all(k.isidentifier() and not keyword.iskeyword(k) for k in value)
        if not value:
            return "dict()" if call else "{}"
        pad, inner = _INDENT * depth, _INDENT * (depth + 1)
        lines = []
        for key, item in value.items():
            text = self.render(item, _join(path, key), depth + 1)
            lines.append(f"{inner}{key}={text}," if call else f"{inner}{key!r}: {text},")
        body = "\n".join(lines)
        return f"dict(\n{body}\n{pad})" if call else f"{{\n{body}\n{pad}}}"

    def _sequence(self, value: list | tuple, path: str, depth: int) -> str:
        items = [self.render(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        open_, close = ("[", "]") if isinstance(value, list) else ("(", ")")
        if any("\n" in t for t in items):
            pad, inner = _INDENT * depth, _INDENT * (depth + 1)
            return open_ + "\n" + "".join(f"{inner}{t},\n" for t in items) + pad + close
        if isinstance(value, tuple) and len(items) == 1:
            return f"({items[0]},)"
        return open_ + ", ".join(items) + close

    def _set(self, value: set | frozenset, path: str, depth: int) -> str:
        items = sorted(self.render(v, f"{path}{{}}", depth + 1) for v in value)
        body = "{" + ", ".join(items) + "}" if items else ""
        if isinstance(value, frozenset):
            return f"frozenset({body})"
        return body or "set()"

    def _numpy(self, value: np.ndarray | np.generic, path: str) -> str:
        if isinstance(value, (np.str_, np.bytes_)):
            return repr(value.item())
        if value.dtype.kind not in "biufc":
            raise ConfigError(f"{path}: cannot write a numpy value of dtype {value.dtype} ({self.where})")
        self.needs_numpy = True
        dtype = repr(value.dtype.str)
        if isinstance(value, np.generic):
            return f"np.dtype({dtype}).type({self.render(value.item(), path)})"
        text = f"np.array({self.render(value.tolist(), path)}, dtype={dtype})"
        return text if value.size else f"{text}.reshape({value.shape!r})"

    def _reference(self, value: Any, path: str) -> str:
        module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
        if module and module != "__main__" and "<" not in qualname:
            try:
                found: Any = importlib.import_module(module)
                for part in qualname.split("."):
                    found = getattr(found, part)
            except (ImportError, AttributeError):
                found = None
            if found is value:
                self.needs_import_module = True
                return f"import_module({module!r}).{qualname}"
        raise ConfigError(
            f"{path}: {value!r} cannot be written to a config file ({self.where}): only classes and functions "
            "importable by module and name can; define it at the top level of an importable module"
        )


def _is_default_instance(value: Any) -> bool:
    """Whether ``type(value)()`` makes the same object, judged by ``repr`` (``Tanh()``; not a default ``<... at 0x>``
    repr, not ``LeakyReLU(negative_slope=0.1)``): then ``ClassName()`` in the file stands for it."""
    text = repr(value)
    if " at 0x" in text:
        return False
    try:
        return repr(type(value)()) == text
    except Exception:  # noqa: BLE001 -- a constructor that needs arguments (or fails): not such an instance
        return False


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _float_source(x: float) -> str:
    if math.isnan(x):
        return "float('nan')"
    if math.isinf(x):
        return "float('inf')" if x > 0 else "-float('inf')"
    return repr(x)  # shortest text that reads back as the same float


def _check_mapping(value: Any, name: str, path: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"cannot save {name} to '{path}': expected a dict or EasyDict, got {type(value).__name__}")


def _sections(cfg: Mapping, create_cfg: Mapping | None, system_cfg: Mapping | None,
              path: str) -> list[tuple[str, Mapping]]:
    candidates = [("main_config", cfg), ("create_config", create_cfg), ("system_config", system_cfg)]
    sections: list[tuple[str, Mapping]] = [(n, v) for n, v in candidates if v is not None]
    for name, value in sections:
        _check_mapping(value, name, path)
    return sections


def _imports(renderer: _Renderer) -> list[str]:
    lines = []
    if renderer.needs_import_module:
        lines.append("from importlib import import_module")
    if renderer.needs_numpy:
        lines.append("import numpy as np")
    return lines


def save_config(
    cfg: Mapping, path: str, create_cfg: Mapping | None = None, *, system_cfg: Mapping | None = None
) -> None:
    """Write ``main_config = {...}`` (and ``create_config``/``system_config`` when given) to ``path``, atomically.

    Keys keep their order; the output depends only on the values, so the same config always gives the same bytes.
    """
    path = os.fspath(path)
    renderer = _Renderer(call_style=False, where=path)
    body = [f"{name} = {renderer.render(value, '')}" for name, value in _sections(cfg, create_cfg, system_cfg, path)]
    header = ["# Written by ding.config.save_config; load it with ding.config.read_config(<this file>)."]
    imports = _imports(renderer)
    text = "\n".join(header + imports + [""] + body) + "\n"
    atomic_write_text(path, text)


def save_config_formatted(
    cfg: Mapping, path: str, create_cfg: Mapping | None = None, *, system_cfg: Mapping | None = None
) -> None:
    """Write the "formatted" copy: each config as ``dict(key=value, ...)`` wrapped in ``EasyDict``, one key per line."""
    path = os.fspath(path)
    renderer = _Renderer(call_style=True, where=path)
    body = []
    for name, value in _sections(cfg, create_cfg, system_cfg, path):
        body += [f"{name} = {renderer.render(value, '')}", f"{name} = EasyDict({name})"]
    text = "\n".join(["from easydict import EasyDict"] + _imports(renderer) + [""] + body) + "\n"
    atomic_write_text(path, text)
