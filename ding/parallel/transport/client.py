"""The HTTP client of master and slave: JSON envelopes, a timeout on every request, bounded retries."""
from __future__ import annotations

import contextlib
import functools
import http.client
import json
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ding.parallel.transport.base import API_PREFIX, TOKEN_HEADER, PeerUnreachable, RequestRejected


class _ConnectTimeout(Exception):
    """The TCP connect did not complete in time (retried, like a refused connection)."""


# What a retry can fix: the peer is not listening (yet, or any more), the connection was cut, or the peer died while
# answering. A read that times out is not retried: the peer is there but stuck.
_RETRYABLE = (ConnectionError, http.client.IncompleteRead, http.client.BadStatusLine, _ConnectTimeout)
_T = TypeVar("_T")


def retried(call: Callable[[], _T], attempts: int, retryable: tuple[type[Exception], ...], pause: float,
            growth: float = 1.0) -> _T:
    """``call()``, tried up to ``attempts`` times while it raises one of ``retryable`` (the last try's error
    propagates), sleeping ``pause`` seconds after the first failure and ``growth`` times longer after each next one."""
    for attempt in range(attempts - 1):
        try:
            return call()
        except retryable:
            time.sleep(pause * growth ** attempt)
    return call()


class HttpClient:
    """POST JSON to one peer's ``/api/v1/<endpoint>`` and return the envelope's ``data``; an error envelope raises
    :class:`RequestRejected`. Only what a retry can fix is retried (the handlers are idempotent), ``retries`` times
    with exponential back-off. Each request is one short ``http.client`` connection: thread-safe, never proxied."""

    def __init__(self, name: str, host: str, port: int, token: str, timeout: float = 10.0, retries: int = 3,
                 backoff: float = 0.1) -> None:
        self.name, self.host, self.port = name, host, int(port)
        self._headers = {TOKEN_HEADER: token, "Content-Type": "application/json", "Connection": "close"}
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)

    def post(self, endpoint: str, data: Mapping[str, Any] | None = None, timeout: float | None = None,
             retries: int | None = None) -> dict[str, Any]:
        body = json.dumps(dict(data or {}), allow_nan=True).encode()
        timeout = self.timeout if timeout is None else float(timeout)
        attempts = 1 + (self.retries if retries is None else int(retries))
        exchange = functools.partial(self._exchange, f"{API_PREFIX}/{endpoint}", body, timeout)
        try:
            status, raw = retried(exchange, attempts, _RETRYABLE, self.backoff, growth=2.0)
        except _RETRYABLE as e:
            raise PeerUnreachable(f"cannot reach {self.name} at {self.host}:{self.port} (/{endpoint}, {attempts} "
                                  f"attempts): {type(e).__name__}: {e}") from e
        except TimeoutError as e:  # (socket.timeout) connected, but no answer in time
            raise PeerUnreachable(f"{self.name} ({self.host}:{self.port}) did not answer /{endpoint} within "
                                  f"{timeout:g} s") from e
        except (OSError, http.client.HTTPException) as e:  # any other transport failure: the peer is not usable
            raise PeerUnreachable(f"{self.name} ({self.host}:{self.port}) failed on /{endpoint}: "
                                  f"{type(e).__name__}: {e}") from e
        return self._unwrap(status, raw, endpoint)

    def _exchange(self, path: str, body: bytes, timeout: float) -> tuple[int, bytes]:
        """(HTTP status, body) of one request on a fresh connection; the connect waits at most 5 s."""
        with contextlib.closing(http.client.HTTPConnection(self.host, self.port, timeout=min(timeout, 5.0))) as conn:
            try:
                conn.connect()
            except TimeoutError as e:
                raise _ConnectTimeout(f"connect timed out after {min(timeout, 5.0):g} s") from e
            assert conn.sock is not None
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sock.settimeout(timeout)
            conn.request("POST", path, body=body, headers=self._headers)
            resp = conn.getresponse()
            return resp.status, resp.read()

    def _unwrap(self, status: int, raw: bytes, endpoint: str) -> dict[str, Any]:
        env: Any = None
        with contextlib.suppress(ValueError):
            env = json.loads(raw)
        if not isinstance(env, dict) or "success" not in env:
            raise RequestRejected(f"{self.name} ({self.host}:{self.port}) answered /{endpoint} with HTTP "
                                  f"{status} and no ding envelope (is this a ding process?)", status)
        if not env.get("success"):
            raise RequestRejected(f"{self.name} ({self.host}:{self.port}) rejected /{endpoint}: HTTP "
                                  f"{env.get('code', status)}: {env.get('message', '')}",
                                  int(env.get("code", status)))
        data = env.get("data")
        return data if isinstance(data, dict) else {}

    def close(self) -> None:
        """Nothing to release: every request has its own connection."""
