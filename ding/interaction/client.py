"""The HTTP client both sides use: JSON envelopes, a timeout on every request, bounded retries on connection errors."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from .base import API_PREFIX, TOKEN_HEADER, PeerUnreachable, RequestRejected


class HttpClient:
    """POST JSON to one peer (``http://host:port/api/v1/<endpoint>``) and return the envelope's ``data``.

    Only failures a retry can fix are retried (connection refused/reset, connect timeout, an answer cut off because
    the peer died while sending it), ``retries`` times with
    exponential back-off; an error envelope (401, 400, 500, ...) raises :class:`RequestRejected` at once. Handlers
    on both sides are idempotent (tasks are keyed by id), so a retried request is harmless. One
    ``requests.Session`` per thread (sessions are not thread-safe).
    """

    def __init__(self, name: str, host: str, port: int, token: str, timeout: float = 10.0, retries: int = 3,
                 backoff: float = 0.1) -> None:
        self.name = name
        self.host = host
        self.port = int(port)
        self.base_url = f"http://{host}:{int(port)}{API_PREFIX}"
        self._headers = {TOKEN_HEADER: token, "Content-Type": "application/json"}
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self._local = threading.local()

    def _session(self) -> Any:
        s = getattr(self._local, "session", None)
        if s is None:
            import requests

            s = self._local.session = requests.Session()
            s.trust_env = False  # loopback and cluster peers: never route through an HTTP proxy from the environment
        return s

    def post(self, endpoint: str, data: Mapping[str, Any] | None = None, timeout: float | None = None,
             retries: int | None = None) -> dict[str, Any]:
        import requests

        url = f"{self.base_url}/{endpoint}"
        body = json.dumps(dict(data or {}), allow_nan=True)
        timeout = self.timeout if timeout is None else float(timeout)
        attempts = 1 + (self.retries if retries is None else int(retries))
        last: Exception | None = None
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            try:
                resp = self._session().post(url, data=body, headers=self._headers, timeout=(min(timeout, 5.0), timeout))
            except (requests.ConnectionError, requests.exceptions.ConnectTimeout,
                    requests.exceptions.ChunkedEncodingError) as e:  # (the last: the peer died mid-answer)
                last = e
                continue
            except requests.exceptions.ReadTimeout as e:
                raise PeerUnreachable(f"{self.name} ({self.host}:{self.port}) did not answer /{endpoint} within "
                                      f"{timeout:g} s") from e
            except requests.exceptions.RequestException as e:  # any other transport failure: the peer is not usable
                raise PeerUnreachable(f"{self.name} ({self.host}:{self.port}) failed on /{endpoint}: "
                                      f"{type(e).__name__}: {e}") from e
            return self._unwrap(resp, endpoint)
        raise PeerUnreachable(f"cannot reach {self.name} at {self.host}:{self.port} (/{endpoint}, {attempts} "
                              f"attempts): {type(last).__name__}: {last}") from last

    def _unwrap(self, resp: Any, endpoint: str) -> dict[str, Any]:
        try:
            env = resp.json()
        except ValueError:
            env = None
        if not isinstance(env, dict) or "success" not in env:
            raise RequestRejected(f"{self.name} ({self.host}:{self.port}) answered /{endpoint} with HTTP "
                                  f"{resp.status_code} and no ding envelope (is this a ding process?)",
                                  resp.status_code)
        if not env.get("success"):
            raise RequestRejected(f"{self.name} ({self.host}:{self.port}) rejected /{endpoint}: HTTP "
                                  f"{env.get('code', resp.status_code)}: {env.get('message', '')}",
                                  int(env.get("code", resp.status_code)))
        data = env.get("data")
        return data if isinstance(data, dict) else {}

    def close(self) -> None:
        s = getattr(self._local, "session", None)
        if s is not None:
            s.close()
            self._local.session = None
