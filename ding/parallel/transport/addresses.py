"""Which address other hosts reach this one at (what ``advertise_host='auto'`` becomes): the address of the interface
that routes towards a peer (a UDP "connect" sends nothing), else the first non-loopback address of the host name.
"""
from __future__ import annotations

import contextlib
import os
import socket

# Where the Slurm launcher (srun) ran: a peer every node of the job can route to.
LAUNCH_NODE_ENV = "SLURM_LAUNCH_NODE_IPADDR"


def _route_source(peer: str) -> str | None:
    with contextlib.suppress(OSError):
        for *_, addr in socket.getaddrinfo(peer, 9, socket.AF_INET, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, contextlib.suppress(OSError):
                s.connect((addr[0], 9))
                return str(s.getsockname()[0])
    return None


def _resolved_host_name() -> str | None:
    with contextlib.suppress(OSError):
        for *_, addr in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET, socket.SOCK_STREAM):
            if not str(addr[0]).startswith("127."):
                return str(addr[0])
    return None


def local_address(towards: str | None = None) -> str:
    """This host's address as a peer at ``towards`` sees it (None: the Slurm launch node, if any); falls back to the
    host name's address, then to ``127.0.0.1``."""
    for peer in (towards, os.environ.get(LAUNCH_NODE_ENV)):
        if peer and peer not in ("0.0.0.0", ""):
            found = _route_source(peer)
            if found:
                return found
    return _resolved_host_name() or "127.0.0.1"


def resolve_advertise_host(value: str | None, towards: str | None = None) -> str | None:
    """``value`` unless it is ``'auto'``, which becomes :func:`local_address` (``towards``: the peer to be reached)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return local_address(towards)
    return value
