"""Text loggers per worker and the TensorBoard writer factory."""
from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import Any

import numpy as np

_FMT = logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")


def build_logger(path: str, name: str | None = None, need_tb: bool = True, need_text: bool = True,
                 text_level: int | str = logging.INFO, to_console: bool = False) -> tuple[TextLogger | None, Any]:
    """Return ``(text_logger, tb_logger)``. The text log goes to ``<path>/<name>_logger.txt`` (``name``: 'default'),
    at ``text_level``; it is None when ``need_text`` is False.

    ``tb_logger`` is a tensorboardX ``SummaryWriter`` writing under ``<path>/<name>/`` or None.
    """
    name = "default" if name is None else name
    os.makedirs(path, exist_ok=True)
    logger = None
    if need_text:
        logger = TextLogger(get_text_logger(os.path.join(path, f"{name}_logger.txt"), name, to_console))
        logger.setLevel(_level(text_level))
    tb_logger = build_tb_writer(os.path.join(path, name)) if need_tb else None
    return logger, tb_logger


def _level(level: int | str) -> int:
    """A logging level from its number or its name ('debug', 'INFO', ...)."""
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise ValueError(f"text_level: expected a logging level (an int or a name such as 'INFO'), got {level!r}")
    if isinstance(level, int):
        return level
    found = logging.getLevelName(level.upper())
    if not isinstance(found, int):
        raise ValueError(f"text_level: unknown logging level {level!r}; use one of DEBUG, INFO, WARNING, ERROR, "
                         "CRITICAL")
    return found


def _format_value(v: Any) -> str:
    return f"{v:.6f}" if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else str(v)


def _grid(rows: list[list[str]], header: bool) -> str:
    """``rows`` as a grid of ``+---+`` lines, the first row set off by ``+===+`` when it is a ``header``."""
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(len(r) for r in rows))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [rule]
    for n, row in enumerate(rows):
        cells = list(row) + [""] * (len(widths) - len(row))
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |")
        lines.append(rule.replace("-", "=") if header and n == 0 else rule)
    return "\n".join(lines)


def tabulate_vars(variables: dict[str, Any]) -> str:
    """``variables`` as a two-column grid (Name, Value), one variable a row; numbers with six decimals."""
    if not variables:
        return "\n(no variables)"
    return "\n" + _grid([["Name", "Value"]] + [[str(k), _format_value(v)] for k, v in variables.items()], True)


def tabulate_vars_hor(variables: dict[str, Any], per_row: int = 4) -> str:
    """``variables`` as grids of ``per_row`` columns, a Name line above a Value line."""
    items = list(variables.items())
    if not items:
        return "\n(no variables)"
    blocks = []
    for start in range(0, len(items), per_row):
        chunk = items[start:start + per_row]
        blocks.append(_grid([["Name"] + [str(k) for k, _ in chunk], ["Value"] + [_format_value(v) for _, v in chunk]],
                            False))
    return "\n" + "\n".join(blocks) + "\n"


class TextLogger(logging.LoggerAdapter):
    """:func:`build_logger`'s text logger: the logger (``.logger``) plus DI-engine's table helpers
    ``get_tabulate_vars`` / ``get_tabulate_vars_hor``."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})

    get_tabulate_vars = staticmethod(tabulate_vars)
    get_tabulate_vars_hor = staticmethod(tabulate_vars_hor)


def build_tb_writer(logdir: str) -> Any:
    """A tensorboardX ``SummaryWriter`` at ``logdir`` whose event file never replaces another's.

    tensorboardX names an event file by the second and the host and opens it with ``'wb'``: a second writer in the
    same directory within one second (a run resumed right after it stopped) would erase the first one's records.
    A random suffix keeps each file; TensorBoard reads every event file of a directory.
    """
    import uuid

    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logdir, filename_suffix=f".{uuid.uuid4().hex[:8]}")
    _one_close_at_a_time(getattr(writer, "file_writer", None))
    return writer


def _one_close_at_a_time(file_writer: Any) -> None:
    """Serialise the closes of a tensorboardX event file. tensorboardX closes every event file again at interpreter
    exit (an ``atexit`` hook); its ``close`` checks a flag it sets only at the end, so a close still running in
    another thread when the process exits (a role shutting down after an error) made the hook fail with
    ``AttributeError: 'NoneType' object has no attribute 'close'`` and a traceback on stderr. With the lock the hook
    waits for that close and then finds the file closed."""
    import threading

    events: Any = getattr(file_writer, "event_writer", None)
    close = getattr(events, "close", None)
    if events is None or close is None:
        return
    lock = threading.Lock()

    def locked_close() -> None:
        with lock:
            close()

    events.close = locked_close


def get_text_logger(file: str | None, name: str, to_console: bool = False) -> logging.Logger:
    """A logger named ``ding.<name>`` writing to ``file`` (replacing earlier handlers of the same name)."""
    logger = logging.getLogger(f"ding.{name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()
    if file:
        os.makedirs(os.path.dirname(os.path.abspath(file)), exist_ok=True)
        fh = logging.FileHandler(file)
        fh.setFormatter(_FMT)
        logger.addHandler(fh)
    if to_console:
        sh = logging.StreamHandler(sys.stdout)
        sh.setFormatter(_FMT)
        logger.addHandler(sh)
    return logger


def close_logger(logger: logging.Logger | logging.LoggerAdapter) -> None:
    target = logger.logger if isinstance(logger, logging.LoggerAdapter) else logger
    for h in list(target.handlers):
        target.removeHandler(h)
        h.close()


class ConsoleStream:
    """``sys.stdout`` (looked up at each write) that keeps an optional status line below the log lines.

    Console log handlers write through it; a progress display sets the status line with :func:`set_status_line`.
    Each log line first clears the status line, then the status line is drawn again under it, so the two never mix
    on one terminal line.
    """

    status: str | None = None

    def write(self, s: str) -> int:
        out = sys.stdout
        if ConsoleStream.status is None:
            return out.write(s)
        out.write("\r\033[K")
        n = out.write(s)
        if s.endswith("\n"):
            out.write(ConsoleStream.status)
        out.flush()
        return n

    def flush(self) -> None:
        sys.stdout.flush()


def set_status_line(text: str | None) -> None:
    """Show ``text`` as the status line on stdout (None removes it). Only meant for terminals."""
    out = sys.stdout
    if text is None:
        if ConsoleStream.status is not None:
            out.write("\r\033[K")
            out.flush()
        ConsoleStream.status = None
        return
    ConsoleStream.status = text
    out.write("\r\033[K" + text)
    out.flush()



def _yaml_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    text = str(v)
    # a plain word stays bare; anything else is a JSON string, which is also a YAML double-quoted scalar
    return text if re.fullmatch(r"[A-Za-z_][\w.\-/]*", text) and text.lower() not in _YAML_WORDS else json.dumps(text)


_YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "~"}


def _yaml_lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            key = _yaml_scalar(str(k))
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{key}:")
                out += _yaml_lines(v, indent + (2 if isinstance(v, dict) else 0))
            else:
                out.append(f"{pad}{key}: {_yaml_empty_or_scalar(v)}")
    else:
        for v in value:
            if isinstance(v, (dict, list)) and v:
                sub = _yaml_lines(v, indent + 2)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out += sub[1:]
            else:
                out.append(f"{pad}- {_yaml_empty_or_scalar(v)}")
    return out


def _yaml_empty_or_scalar(v: Any) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return _yaml_scalar(v)


def pretty_print(result: dict, direct_print: bool = True) -> str:
    """``result`` as block-style YAML, its top-level ``None`` values left out (DI-engine's name); printed too unless
    ``direct_print=False``. Values must be JSON-serialisable (numbers, strings, lists, dicts)."""
    if not isinstance(result, dict):
        raise TypeError(f"pretty_print: expected a dict, got {type(result).__name__}")
    kept = {k: v for k, v in result.items() if v is not None}
    try:
        plain = json.loads(json.dumps(kept))
    except TypeError as err:
        raise TypeError(f"pretty_print: every value must be JSON-serialisable ({err})") from None
    text = "\n".join(_yaml_lines(plain, 0)) + "\n" if plain else "{}\n"
    if direct_print:
        print(text)
    return text
