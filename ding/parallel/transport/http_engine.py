"""DI-engine's generic HTTP helpers (``ding.interaction.base``'s network part), for user code written against
DI-engine's API; ding's own master and slave use :class:`ding.parallel.transport.client.HttpClient`."""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from ding.parallel.transport.base import local_address
from ding.parallel.transport.client import retried
from ding.parallel.transport.common import translate_dict_func

DEFAULT_RETRIES = 5
DEFAULT_RETRY_WAITING = 1.0
DEFAULT_TIMEOUT = 30.0  # seconds per request: no call waits forever on a peer that accepted and went silent
_DEFAULT_PORTS = {"http": 80, "https": 443}


def get_host_ip() -> str:
    """This host's address on the interface that routes outward (``127.0.0.1`` when there is no route)."""
    return local_address(towards="8.8.8.8")  # a public address: only its route is looked up


def split_http_address(address: str, default_port: int | None = None) -> tuple[str, int, bool, str]:
    """``(host, port, https, path)`` of ``http(s)://host[:port][/path]``; without a port, ``default_port`` or the
    scheme's (80 / 443)."""
    parts = urlsplit(address)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"split_http_address: {address!r} is not an http:// or https:// address with a host "
                         "(e.g. 'http://1.2.3.4:8888/path')")
    try:
        port = parts.port
    except ValueError as e:
        raise ValueError(f"split_http_address: {address!r} has an invalid port ({e})") from e
    return parts.hostname, port or default_port or _DEFAULT_PORTS[scheme], scheme == "https", parts.path


def _segments(path: str | None) -> list[str]:
    return [s for s in (path or "").split("/") if s]


class HttpEngine:
    """A ``requests`` session (proxies ignored) bound to ``http(s)://host:port/path``; subclasses shape its calls
    through ``_data_process(data)``, ``_base_headers()`` and ``_error_handler(err)``."""

    def __init__(self, host: str, port: int, https: bool = False, path: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        import requests

        if not isinstance(host, str) or not host:
            raise ValueError(f"HttpEngine: host must be a non-empty string, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"HttpEngine: port must be an int in 1..65535, got {port!r}")
        self.host, self.port, self.https, self.timeout = host, port, bool(https), float(timeout)
        self._base_segments = _segments(path)
        self._session = requests.Session()
        self._session.trust_env = False

    def _data_process(self, data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
        return data or {}

    def _base_headers(self) -> Mapping[str, Any]:
        return {}

    def _error_handler(self, err: Exception) -> Any:
        raise err

    def get_url(self, path: str | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        segments = self._base_segments + _segments(path)
        tail = "/".join(quote(s, safe="@:!$&'()*+,;=-._~%") for s in segments)
        return f"{'https' if self.https else 'http'}://{host}:{self.port}/{tail}"

    def request(self, method: str, path: str, data: Mapping[str, Any] | None = None,
                headers: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None,
                raise_for_status: bool = True, retries: int | None = None,
                retry_waiting: float | None = None) -> Any:
        """Send ``data`` as JSON to the base URL joined with ``path``: an error status raises ``requests.HTTPError``,
        a failed connection or a timeout is retried ``retries`` times, ``retry_waiting`` s apart."""
        import requests

        all_headers = {**self._base_headers(), **(headers or {})}
        attempts = 1 + max(0, DEFAULT_RETRIES if retries is None else int(retries))
        waiting = DEFAULT_RETRY_WAITING if retry_waiting is None else float(retry_waiting)
        try:
            body = json.dumps(self._data_process(data) or {})
            send = functools.partial(self._session.request, method=method, url=self.get_url(path), data=body,
                                     headers=all_headers, params=params or {}, timeout=self.timeout)
            response = retried(send, attempts, (requests.ConnectionError, requests.Timeout), waiting)
            if raise_for_status:
                response.raise_for_status()
            return response
        except Exception as err:  # noqa: BLE001 -- handed to the hook, which raises (DI-engine's contract)
            return self._error_handler(err)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> HttpEngine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def get_http_engine_class(headers: Mapping[str, Callable[..., Any]],
                          data_processor: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
                          http_error_gene: Callable[[Exception], Exception] | None = None,
                          ) -> Callable[..., type[HttpEngine]]:
    """``get_http_engine_class(headers, ...)(*args, **kwargs)`` is an :class:`HttpEngine` subclass whose requests carry
    ``{name: f(*args, **kwargs)}`` for each ``name: f`` of ``headers``, send ``data_processor(data)`` and raise
    ``http_error_gene(err)`` for an HTTP error."""
    header_values = translate_dict_func(headers)

    def make(*args: Any, **kwargs: Any) -> type[HttpEngine]:
        class _HttpEngine(HttpEngine):
            def _data_process(self, data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
                return data_processor(data or {}) if data_processor is not None else (data or {})

            def _base_headers(self) -> Mapping[str, Any]:
                return header_values(*args, **kwargs)

            def _error_handler(self, err: Exception) -> Any:
                import requests

                if http_error_gene is not None and isinstance(err, requests.HTTPError):
                    raise http_error_gene(err) from err
                raise err

        return _HttpEngine

    return make


__all__ = ["DEFAULT_RETRIES", "DEFAULT_RETRY_WAITING", "DEFAULT_TIMEOUT", "get_host_ip", "split_http_address",
           "HttpEngine", "get_http_engine_class"]
