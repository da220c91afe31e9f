"""A process's name in ``ps -o comm`` / ``top``: the parallel roles and the learner's training process name
themselves (``ding-learner0``, ``ding-trainer``)."""
from __future__ import annotations

import ctypes
import sys

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
