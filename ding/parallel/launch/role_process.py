"""What every parallel-mode role process is given (:func:`role_env`) and does about itself: its name in ``ps`` and
dying with its launcher.

``ding -m parallel`` puts its own pid under :data:`PARENT_PID_ENV` in each child's environment; the role
(``ding -m dist --module ...``) calls :func:`die_with_parent` at its start.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

from ding.utils.process_helper import set_process_name

__all__ = ["PARENT_PID_ENV", "role_env", "set_process_name", "die_with_parent"]

PARENT_PID_ENV = "DING_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def role_env(token: str) -> dict[str, str]:
    """The environment a launcher starts a role with: its own, the run's token (never on a command line), unbuffered
    output, and the directory the config's ``import_names`` are found from."""
    from ding.parallel.transport import TOKEN_ENV
    from ding.utils.import_dirs import CONFIG_DIR_ENV, config_dir

    env = dict(os.environ)
    env[TOKEN_ENV] = token
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see docs/benchmarks.md, 'thread trap'
    if config_dir():
        env[CONFIG_DIR_ENV] = str(config_dir())
    return env


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
