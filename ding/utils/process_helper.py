"""Small helpers for the processes ding starts: a process's name in ``ps``, and the two ends of a fork (the parallel
launcher forks its roles)."""
from __future__ import annotations

import ctypes
import logging
import os
import sys
from typing import NoReturn

_PR_SET_NAME = 15


def set_process_name(name: str) -> None:
    """Name the process for ``ps -o comm`` / ``top`` (Linux; at most 15 characters are kept)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def flush_std_streams() -> None:
    """Flush stdout and stderr before a fork: what is buffered would otherwise be written twice, once by the child."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def end_forked_child(code: int) -> NoReturn:
    """End a forked child with ``code``: flush its logs and streams, then ``os._exit`` (it never returns into the
    parent's code, nor runs the parent's exit handlers)."""
    try:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(int(code) & 0xFF)
