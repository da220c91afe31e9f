"""JsonRecord: a dataclass that crosses a process boundary as a JSON object and is checked where it comes in.

``from_json`` checks every field of the decoded JSON object against the dataclass annotations (``int``, ``float``,
``str``, ``bool``, ``X | None``, ``list[X]``, ``dict[str, X]``, ``Any`` and nested records): a missing field, a wrong
type (a bool is not an int, a str is not a number) or a non-finite float raises one :class:`ProtocolError` naming the
record, the field (``metadata[0].data_id``) and the peer it came from. A record adds its own rules in ``_validate``.
Fields without a default are required; keys a record does not know are ignored. ``to_json`` is the way back.
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union

from .errors import ProtocolError

R = TypeVar("R", bound="JsonRecord")

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(value: Any, tp: Any, where: str, record: str, peer: str) -> Any:
    """``value`` checked against the annotation ``tp`` (numbers made float where a float is expected)."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        real = [a for a in args if a is not type(None)]
        return _convert(value, real[0], where, record, peer)
    if tp is Any:
        return value

    def bad(problem: str) -> ProtocolError:
        return ProtocolError(record, where, problem, peer)

    if tp is bool:
        if not isinstance(value, bool):
            raise bad(f"must be a bool, got {type(value).__name__}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"must be an int, got {type(value).__name__} {value!r:.40}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(f"must be a number, got {type(value).__name__} {value!r:.40}")
        if not math.isfinite(value):
            raise bad(f"must be a finite number, got {value}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad(f"must be a str, got {type(value).__name__}")
        return value
    if isinstance(tp, type) and issubclass(tp, JsonRecord):
        if not isinstance(value, Mapping):
            raise bad(f"must be a JSON object ({tp.__name__}), got {type(value).__name__}")
        nested = tp._build(value, peer, record, f"{where}.")
        try:
            nested._validate(peer, None)
        except ProtocolError as e:
            raise ProtocolError(record, f"{where}.{e.field}", e.problem, peer) from None
        return nested
    if origin is list:
        if not isinstance(value, list):
            raise bad(f"must be a list, got {type(value).__name__}")
        (item,) = typing.get_args(tp)
        fast = _scalar_list(value, item)  # lists of plain scalars (priorities, ids) in one pass; None: check each
        if fast is not None:
            return fast
        return [_convert(v, item, f"{where}[{i}]", record, peer) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise bad(f"must be a JSON object with str keys, got {type(value).__name__}")
        _, item = typing.get_args(tp)
        return {k: _convert(v, item, f"{where}.{k}", record, peer) for k, v in value.items()}
    raise TypeError(f"{record}.{where}: JsonRecord cannot check type {_type_name(tp)}")  # a bug in the record


def _scalar_list(value: list, item: Any) -> list | None:
    """``value`` as a checked ``list[item]`` for ``item`` int, float, str or bool when every element is exactly
    of a JSON scalar type that passes (the common case, checked without a call per element), and for ``item`` Any;
    None otherwise, and the caller checks element by element (and names the bad one)."""
    if item is int:
        return value if all(type(v) is int for v in value) else None
    if item is float:
        if all(type(v) is float or type(v) is int for v in value) and all(map(math.isfinite, value)):
            return [float(v) for v in value]
        return None
    if item is str:
        return value if all(type(v) is str for v in value) else None
    if item is bool:
        return value if all(type(v) is bool for v in value) else None
    if item is Any:  # JSON values of any kind: nothing to check, nothing to convert
        return value
    return None


class JsonRecord:
    """A typed message: ``from_json`` checks and builds it, ``to_json`` gives the JSON object to send."""

    @classmethod
    def from_json(cls: type[R], data: Any, peer: str = "a peer", context: Any = None) -> R:
        """The record in ``data`` (a decoded JSON object), or :class:`ProtocolError`. ``context`` is what a record's
        own rules need (the task an answer belongs to)."""
        if not isinstance(data, Mapping):
            raise ProtocolError(cls.__name__, "(message)", f"must be a JSON object, got {type(data).__name__}", peer)
        rec = cls._build(data, peer, cls.__name__)
        rec._validate(peer, context)
        return rec

    @classmethod
    def _build(cls: type[R], data: Mapping[str, Any], peer: str, record: str, prefix: str = "") -> R:
        values = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if not f.init:
                continue
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise ProtocolError(record, prefix + f.name, "is missing", peer)
                continue
            values[f.name] = _convert(data[f.name], _hints(cls)[f.name], prefix + f.name, record, peer)
        return cls(**values)

    def _validate(self, peer: str, context: Any) -> None:
        """A record's own rules beyond the field types; raise :meth:`_bad`."""

    def _bad(self, field_name: str, problem: str, peer: str) -> ProtocolError:
        return ProtocolError(type(self).__name__, field_name, problem, peer)

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            out[f.name] = _to_json(v)
        return out

    def __getitem__(self, key: str) -> Any:
        """Read access by key for callers that treated these records as dicts (DI-engine's style)."""
        if key not in {f.name for f in dataclasses.fields(self)}:  # type: ignore[arg-type]
            raise KeyError(key)
        return getattr(self, key)


_SCALARS = frozenset((int, float, str, bool, type(None)))


def _to_json(v: Any) -> Any:
    if isinstance(v, JsonRecord):
        return v.to_json()
    if isinstance(v, list):
        if all(type(x) in _SCALARS for x in v):  # (priorities, ids: copied in one pass)
            return list(v)
        return [_to_json(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _to_json(x) for k, x in v.items()}
    return v


def fields_doc(cls: type[JsonRecord]) -> str:
    """The fields of a record for a table: required ones as `name`, the ones with a default as `name`?."""
    out = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(f"`{f.name}`" if required else f"`{f.name}`?")
    return ", ".join(out) or "(empty)"
