"""Check the keys a user wrote against the merged defaults: unknown keys (with "did you mean"), removed keys (with
what replaced them) and wrong types."""
from __future__ import annotations

import difflib
import math
from typing import Any, Iterable, Mapping

from ding.utils import ConfigError

# Keys accepted (with any content) in every section: module lists for the registries and free-form hook arguments.
ALWAYS_FREE_KEYS = frozenset({"import_names", "ext_args"})
# Keys the components add for bookkeeping; never offered as a suggestion.
_HIDDEN_KEYS = frozenset({"cfg_type"})
_MAX_LISTED_KEYS = 12


class OpenSections:
    """Which dotted paths are free-form. The longest matching prefix decides; no match means closed.

    ``open_paths`` are free-form sections (any key, any value); ``closed_paths`` re-close a sub-section inside an
    open one (e.g. ``env.manager`` when the env class has no schema but the env manager has).
    """

    def __init__(self, open_paths: Iterable[str] = (), closed_paths: Iterable[str] = ()) -> None:
        self._rules: dict[str, bool] = {p: True for p in open_paths}
        self._rules.update({p: False for p in closed_paths})

    def is_open_root(self, path: str) -> bool:
        """Whether ``path`` itself is listed as open (its contents are free; its own value must still fit)."""
        return self._rules.get(path, False)

    def is_open(self, path: str) -> bool:
        parts = path.split(".")
        for i in range(len(parts), 0, -1):
            rule = self._rules.get(".".join(parts[:i]))
            if rule is not None:
                return rule
        return False


def find_config_problems(
    user_cfg: Mapping,
    merged_cfg: Mapping,
    open_paths: Iterable[str] = (),
    source: str | None = None,
    *,
    closed_paths: Iterable[str] = (),
    path: str = "",
    shown_path: str | None = None,
    removed: Mapping[str, str] | None = None,
) -> list[str]:
    """Every problem in ``user_cfg`` as one message per entry (empty list: all good).

    ``removed`` maps the dotted path of a key that no longer exists to what replaced it (or why it went): a config
    that still sets it gets that message instead of "unknown key".

    ``path`` is where ``user_cfg`` sits inside ``merged_cfg``'s tree (for the open/closed rules); ``shown_path`` is the
    prefix used in messages (e.g. ``create_config.env_manager`` for a create_config section placed at
    ``env.manager``).
    """
    problems: list[str] = []
    rules = OpenSections(open_paths, closed_paths)
    _walk(user_cfg, merged_cfg, path, path if shown_path is None else shown_path, rules, source or "<dict>", problems,
          removed or {})
    return problems


def validate_config(
    user_cfg: Mapping,
    merged_cfg: Mapping,
    open_paths: Iterable[str] = (),
    source: str | None = None,
    *,
    closed_paths: Iterable[str] = (),
) -> None:
    """Raise one :class:`ConfigError` listing every unknown key and wrong-typed value of ``user_cfg``.

    ``merged_cfg`` is the schema: the merged defaults of every component. A key is valid when it exists at the same
    place there. Inside an open path (see :class:`OpenSections`; the open section itself must still be a dict if its
    default is), below an ``import_names``/``ext_args`` key, and
    below a default that is an empty dict (a placeholder), anything is accepted.
    """
    problems = find_config_problems(user_cfg, merged_cfg, open_paths, source, closed_paths=closed_paths)
    if problems:
        raise ConfigError(format_problems(problems))


def format_problems(problems: list[str]) -> str:
    """One problem: its line as is (the ``ding`` command prints it as one line). Several: a count, then one each."""
    if len(problems) == 1:
        return problems[0]
    return "\n".join([f"{len(problems)} problems in the config:"] + [f"  {p}" for p in problems])


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _walk(user: Mapping, schema: Mapping, path: str, shown: str, rules: OpenSections, source: str,
          problems: list[str], removed: Mapping[str, str]) -> None:
    for key, value in user.items():
        if not isinstance(key, str):
            problems.append(f"{_join(shown, repr(key))}: config keys must be strings, got {type(key).__name__} "
                            f"(in {source})")
            continue
        if key in ALWAYS_FREE_KEYS:
            continue
        key_path, key_shown = _join(path, key), _join(shown, key)
        free = rules.is_open(key_path)
        if key not in schema:
            if key_path in removed:
                problems.append(f"{key_shown}: this key was removed ({removed[key_path]}); delete it (in {source})")
            elif not free:
                problems.append(f"{key_shown}: unknown key (in {source}); {_suggest(key, schema)}")
            continue
        default = schema[key]
        if not free or rules.is_open_root(key_path):  # an open section must still be a section
            wrong = type_problem(value, default)
            if wrong:
                problems.append(f"{key_shown}: {wrong} (in {source})")
                continue
        # An empty default dict is a placeholder: its contents are free. Otherwise look inside (a closed
        # sub-section may sit below an open one).
        if isinstance(value, Mapping) and isinstance(default, Mapping) and default:
            _walk(value, default, key_path, key_shown, rules, source, problems, removed)


def _suggest(key: str, schema: Mapping) -> str:
    valid = [k for k in schema if isinstance(k, str) and k not in _HIDDEN_KEYS]
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if not valid:
        return "this section takes no keys"
    listed = ", ".join(valid[:_MAX_LISTED_KEYS]) + (", ..." if len(valid) > _MAX_LISTED_KEYS else "")
    return f"valid keys here: {listed}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def type_problem(value: Any, default: Any) -> str | None:
    """Why ``value`` cannot replace ``default`` (None if it can).

    ``None`` on either side is accepted (a default of None takes anything; a value of None means "unset"). A bool must
    be a bool; an int is fine where a float is expected; where an int is expected only an int or ``inf`` is; lists
    and tuples are interchangeable; dict vs anything else and str vs number are mismatches. Defaults of other types
    are not checked.
    """
    if value is None or default is None:
        return None
    got = f"got {type(value).__name__} {_short(value)}"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"expected bool (True/False), {got}"
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        if isinstance(value, float) and math.isinf(value):
            return None
        if isinstance(value, float) and value.is_integer():
            return f"expected int, {got}; write int({value!r}) or {int(value)}"
        return f"expected int, {got}"
    if isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"expected float (or int), {got}"
    if isinstance(default, str):
        return None if isinstance(value, str) else f"expected str, {got}"
    if isinstance(default, Mapping):
        return None if isinstance(value, Mapping) else f"expected a dict (a config section), {got}"
    if isinstance(default, (list, tuple)):
        return None if isinstance(value, (list, tuple)) else f"expected a list or tuple, {got}"
    return None
