"""Allowed values of config keys, declared by each component beside its defaults.

A component limits its keys in a class attribute next to its ``config`` dict, with paths relative to its own
section (the way ``open_config_keys`` names free-form sections)::

    config_ranges = {
        'learn.batch_size': at_least(1),
        'discount_factor': between(0, 1),
        'other.eps.type': one_of('exp', 'linear'),
    }

``compile_config`` checks every declared key of every component it compiles (after merging, so a bad default or a
bad create_config value is caught too) and names each violation by its full key path. A value of None means
"unset" and is never checked. The declarations of a class and its bases are merged (the subclass wins).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any, Mapping, Protocol

from ding.utils import ConfigError

from .validation import _short, format_problems


class Constraint(Protocol):
    """Anything with ``problem(value) -> str | None`` (None: the value is allowed)."""

    def problem(self, value: Any) -> str | None:
        ...


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Range:
    """A number in ``[low, high]`` (either bound may be open or absent); ``integer`` also asks for a whole number
    (``inf`` is accepted as "no limit")."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    hint: str = ""  # appended to the message, e.g. where the value is usually set

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{_fmt(self.low)}, {_fmt(self.high)}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_fmt(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_fmt(self.high)}"
        return "a number"

    def problem(self, value: Any) -> str | None:
        kind = "an int" if self.integer else "a number"
        hint = f" ({self.hint})" if self.hint else ""
        if not _is_number(value):
            return f"expected {kind} {self.describe()}, got {type(value).__name__} {_short(value)}{hint}"
        v = float(value)
        if self.integer and math.isfinite(v) and not v.is_integer():
            return f"expected {kind} {self.describe()}, got {value!r}{hint}"
        ok = not math.isnan(v)
        if ok and self.low is not None:
            ok = v > self.low if self.low_open else v >= self.low
        if ok and self.high is not None:
            ok = v < self.high if self.high_open else v <= self.high
        return None if ok else f"must be {self.describe()}, got {value!r}{hint}"


@dataclass(frozen=True)
class OneOf:
    """One of a fixed set of values (e.g. schedule types)."""

    choices: tuple[Any, ...]

    def problem(self, value: Any) -> str | None:
        if any(value == c and type(value) is type(c) for c in self.choices):
            return None
        names = [repr(c) for c in self.choices]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        return f"{_short(value)} is not {listed}"


@dataclass(frozen=True)
class ListOf:
    """A list or tuple whose every item fits ``item`` (at least ``min_len`` of them); with ``scalar_ok`` a single
    value is accepted too (a shape: ``4`` or ``[4]`` or ``(3, 84, 84)``)."""

    item: Range
    min_len: int = 1
    scalar_ok: bool = False

    def problem(self, value: Any) -> str | None:
        if self.scalar_ok and _is_number(value):
            return self.item.problem(value)
        alt = " (or a single int)" if self.scalar_ok and self.item.integer else ""
        what = f"a list of {'ints' if self.item.integer else 'numbers'} {self.item.describe()}{alt}"
        if not isinstance(value, (list, tuple)):
            return f"expected {what}, got {type(value).__name__} {_short(value)}"
        if len(value) < self.min_len:
            return f"expected {what} with at least {self.min_len} item(s), got {_short(value)}"
        for i, v in enumerate(value):
            wrong = self.item.problem(v)
            if wrong:
                return f"item {i} of {_short(value)}: {wrong}"
        return None


def at_least(low: float, *, integer: bool = False, hint: str = "") -> Range:
    return Range(low=low, integer=integer, hint=hint)


def greater_than(low: float, *, integer: bool = False, hint: str = "") -> Range:
    return Range(low=low, low_open=True, integer=integer, hint=hint)


def between(low: float, high: float, *, low_open: bool = False, high_open: bool = False, integer: bool = False,
            hint: str = "") -> Range:
    return Range(low=low, high=high, low_open=low_open, high_open=high_open, integer=integer, hint=hint)


def one_of(*choices: Any) -> OneOf:
    return OneOf(tuple(choices))


def sizes(min_len: int = 1) -> ListOf:
    """Layer sizes: a list of ints >= 1 (at least ``min_len`` of them)."""
    return ListOf(at_least(1, integer=True), min_len=min_len)


def shape() -> ListOf:
    """A shape: an int >= 1 or a non-empty list of ints >= 1."""
    return ListOf(at_least(1, integer=True), scalar_ok=True)


def ranges_of(cls: Any) -> dict[str, Constraint]:
    """The ``config_ranges`` of ``cls`` and its bases, merged (the subclass wins); {} for None."""
    merged: dict[str, Constraint] = {}
    for klass in reversed(getattr(cls, "__mro__", ())):
        declared = vars(klass).get("config_ranges")
        if declared is None:
            continue
        if not isinstance(declared, Mapping) or not all(
                isinstance(k, str) and callable(getattr(c, "problem", None)) for k, c in declared.items()):
            raise TypeError(f"{klass.__qualname__}.config_ranges must map dotted key paths to constraints "
                            f"(at_least, between, one_of, ...), got {declared!r}")
        merged.update(declared)
    return merged


def _lookup(cfg: Mapping, path: str) -> tuple[bool, Any]:
    node: Any = cfg
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def undeclared_paths(ranges: Mapping[str, Constraint], default_cfg: Mapping) -> list[str]:
    """Declared paths that are not keys of the component's default config (a typo would never be checked)."""
    return [p for p in ranges if not _lookup(default_cfg, p)[0]]


def find_range_problems(cfg: Mapping, ranges: Mapping[str, Constraint], prefix: str = "",
                        source: str | None = None) -> list[str]:
    """One message per value of ``cfg`` outside its declared range: ``<prefix>.<path>: <why> (in <source>)``.

    Keys that are absent or None are not checked."""
    problems = []
    where = f" (in {source})" if source else ""
    for path, constraint in ranges.items():
        found, value = _lookup(cfg, path)
        if not found or value is None:
            continue
        wrong = constraint.problem(value)
        if wrong:
            problems.append(f"{prefix}.{path}: {wrong}{where}" if prefix else f"{path}: {wrong}{where}")
    return problems


def check_ranges(cfg: Mapping, ranges: Mapping[str, Constraint], prefix: str = "", source: str | None = None) -> None:
    """Raise one :class:`ConfigError` listing every value of ``cfg`` outside its declared range."""
    problems = find_range_problems(cfg, ranges, prefix, source)
    if problems:
        raise ConfigError(format_problems(problems))


def check_batch_fits_buffer(cfg: Any) -> None:
    """A batch the buffer can never hold would leave the loop collecting forever without one update."""
    buffer_cfg = cfg.policy.other.get("replay_buffer") or {}
    size, batch = buffer_cfg.get("replay_buffer_size"), cfg.policy.learn.get("batch_size")
    ratio = (buffer_cfg.get("thruput_controller") or {}).get("sample_min_limit_ratio", 1)
    if size is None or batch is None or batch * ratio <= size:
        return
    need = f"{batch} stored items" if ratio == 1 else f"{batch * ratio:g} stored items (sample_min_limit_ratio={ratio})"
    raise ConfigError(
        f"policy.learn.batch_size: a batch of {batch} needs {need}, but policy.other.replay_buffer.replay_buffer_size "
        f"is {size}, so training would never start; raise replay_buffer_size or lower batch_size"
    )
