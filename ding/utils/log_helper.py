"""Text loggers per worker and the TensorBoard writer factory."""
from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import Any

_FMT = logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")


def build_logger(path: str, name: str, need_tb: bool = True, to_console: bool = False) -> tuple[logging.Logger, Any]:
    """Return ``(text_logger, tb_logger)``. The text log goes to ``<path>/<name>_logger.txt``.

    ``tb_logger`` is a tensorboardX ``SummaryWriter`` writing under ``<path>/<name>/`` or None.
    """
    os.makedirs(path, exist_ok=True)
    logger = get_text_logger(os.path.join(path, f"{name}_logger.txt"), name, to_console)
    tb_logger = build_tb_writer(os.path.join(path, name)) if need_tb else None
    return logger, tb_logger


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


def close_logger(logger: logging.Logger) -> None:
    for h in list(logger.handlers):
        logger.removeHandler(h)
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
