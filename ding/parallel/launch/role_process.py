"""What every parallel-mode role process does about itself: its name in ``ps`` and dying with its launcher.

``ding -m parallel`` puts its own pid under :data:`PARENT_PID_ENV` in each child's environment; the role
(``ding -m dist --module ...``) calls :func:`die_with_parent` at its start.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

from ding.utils.process_helper import set_process_name

__all__ = ["PARENT_PID_ENV", "set_process_name", "die_with_parent"]

PARENT_PID_ENV = "DING_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """If ``DING_PARENT_PID`` names our launcher, get SIGTERM when it dies (Linux), and exit if it is gone already."""
    parent = os.environ.get(PARENT_PID_ENV)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != int(parent):
        raise SystemExit(f"ding: the launcher (pid {parent}) is gone; exiting")
