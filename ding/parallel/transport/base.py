"""What master and slave share: the JSON envelope, the auth token, errors, addresses and a Flask server in a thread.
Bodies are parsed as JSON only (nothing received is ever unpickled); a missing or wrong token (401) or a body that is
not a JSON object (400) never reaches a handler (docs/parallel.md has the protocol)."""
from __future__ import annotations

import contextlib
import errno
import hmac
import json
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ding.parallel.transport.http_server import BoundedWSGIServer, RateLimitedLog, ServerLimits, spawn
from ding.utils import ConfigError, DingError

API_PREFIX = "/api/v1"
TOKEN_HEADER = "X-Ding-Token"
TOKEN_ENV = "DING_AUTH_TOKEN"
MAX_BODY_BYTES = 64 * 1024 * 1024  # metadata batches are small; bulk data goes through the shared directory
LAUNCH_NODE_ENV = "SLURM_LAUNCH_NODE_IPADDR"  # where srun ran: a peer every node of the Slurm job routes to


class InteractionError(DingError, RuntimeError):
    """A master/slave exchange failed; the message names the peer and the endpoint."""


class RequestRejected(InteractionError):
    """The peer answered with an error envelope (bad token, bad request, failed handler): retrying cannot help."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class PeerUnreachable(InteractionError):
    """No answer from the peer within the timeout, after the bounded retries."""


class TaskFailed(InteractionError):
    """A task ended in failure on the slave (its traceback text is in ``remote_traceback``) or was abandoned."""

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback
        self.result: dict[str, Any] = {}  # what the slave's TaskFail carried (DI-engine's failed-task result)


class TaskTimeout(TaskFailed):
    """A task passed its deadline without an answer."""


class TaskCancelled(InteractionError):
    """Raised inside a slave's task handler whose task the master cancelled (``Slave.task_cancelled``)."""


class SlaveLost(TaskFailed):
    """The slave running a task stopped sending heartbeats or could not be reached."""


class ApiError(Exception):
    """Raised by an endpoint handler to answer with an error envelope and HTTP status ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_token() -> str:
    """A fresh random shared secret (what ``ding -m parallel`` hands to its local processes)."""
    return secrets.token_hex(24)


def token_source(value: Any = None, where: str = "system_config.auth_token") -> str:
    """Where :func:`resolve_token` takes the secret from, in words (for an error message: never the secret)."""
    return where if value not in (None, "") else f"the environment variable {TOKEN_ENV}"


def resolve_token(value: Any = None, where: str = "system_config.auth_token") -> str:
    """The shared secret: ``value`` (from config) if set, else the ``DING_AUTH_TOKEN`` environment variable."""
    token = value if value not in (None, "") else os.environ.get(TOKEN_ENV, "")
    if not isinstance(token, str):
        raise ConfigError(f"{where}: the auth token must be a string, got {type(token).__name__}")
    if len(token) < 16:
        source = token_source(value, where)
        got = f"nothing from {source}" if not token else f"{len(token)} characters from {source}"
        raise ConfigError(
            f"{where}: parallel mode needs a shared secret of at least 16 characters (got {got}); set "
            f"{where} or the environment variable {TOKEN_ENV} to the same value on every role "
            "(`ding -m parallel` generates one for its local processes)"
        )
    return token


def envelope(success: bool, code: int, message: str = "", data: Mapping[str, Any] | None = None) -> dict:
    return {"success": success, "code": code, "message": message, "data": dict(data or {})}


def find_free_port(host: str = "127.0.0.1") -> int:
    """A port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def local_address(towards: str | None = None) -> str:
    """This host's address as a peer at ``towards`` (None: the Slurm launch node, if any) sees it: the address of the
    interface that routes there (a UDP "connect" sends nothing), else the host name's, else ``127.0.0.1``."""
    for peer in (towards, os.environ.get(LAUNCH_NODE_ENV)):
        if not peer or peer == "0.0.0.0":
            continue
        with contextlib.suppress(OSError):
            for *_, addr in socket.getaddrinfo(peer, 9, socket.AF_INET, socket.SOCK_DGRAM):
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, contextlib.suppress(OSError):
                    s.connect((addr[0], 9))
                    return str(s.getsockname()[0])
    with contextlib.suppress(OSError):
        for *_, addr in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET, socket.SOCK_STREAM):
            if not str(addr[0]).startswith("127."):
                return str(addr[0])
    return "127.0.0.1"


def resolve_advertise_host(value: str | None, towards: str | None = None) -> str | None:
    """``value`` unless it is ``'auto'``, which becomes :func:`local_address` (``towards``: the peer to be reached)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return local_address(towards)
    return value


Handler = Callable[[dict], Mapping[str, Any] | None]
_HTTP_ERRORS = {404: "not found: every endpoint is POST /api/v1/<name>",
                405: "method not allowed: every endpoint takes POST",
                413: f"body larger than {MAX_BODY_BYTES} bytes"}


class JsonServer:
    """A Flask app of routes ``POST /api/v1/<name>`` handled by ``fn(payload) -> data``, served in a background thread
    by a :class:`BoundedWSGIServer` (``limits``). Port 0 binds a free port (read ``port`` after ``start``)."""

    def __init__(self, name: str, host: str, port: int, token: str, logger: logging.Logger | None = None,
                 limits: ServerLimits | None = None) -> None:
        from flask import Flask

        self.name = name
        self.limits = limits or ServerLimits()
        self.host = host
        self._requested_port = int(port)
        self._token = token.encode("utf-8")
        self._logger = logger or logging.getLogger(f"ding.parallel.transport.{name}")
        self.refusals = RateLimitedLog(self._logger, name, self.limits.log_interval)
        self._handlers: dict[str, Handler] = {}
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self.app = Flask(f"ding-{name}", static_folder=None)  # no /static/<path>: every route needs the token
        self.app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
        self.app.add_url_rule(f"{API_PREFIX}/<path:endpoint>", "api", self._dispatch, methods=["POST"])
        for code in _HTTP_ERRORS:
            self.app.register_error_handler(code, self._http_error)

    def route(self, endpoint: str, handler: Handler) -> None:
        self._handlers[endpoint] = handler

    def _reply(self, success: bool, code: int, message: str = "", data: Mapping[str, Any] | None = None) -> Any:
        from flask import Response

        body = json.dumps(envelope(success, code, message, data), allow_nan=True)
        return Response(body, status=code, mimetype="application/json")

    def _dispatch(self, endpoint: str) -> Any:
        from flask import request

        given = request.headers.get(TOKEN_HEADER, "").encode("utf-8")
        if not hmac.compare_digest(given, self._token):
            self.refusals.note("rejected request", f"/{endpoint}: missing or wrong token", str(request.remote_addr))
            return self._reply(False, 401, f"missing or wrong {TOKEN_HEADER} header")
        handler = self._handlers.get(endpoint)
        if handler is None:
            return self._reply(False, 404, f"unknown endpoint {API_PREFIX}/{endpoint}; known: "
                                           f"{', '.join(sorted(self._handlers))}")
        raw = request.get_data(cache=False)
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return self._reply(False, 400, "the body must be a JSON object (UTF-8); nothing else is accepted")
        if not isinstance(payload, dict):
            return self._reply(False, 400, f"the body must be a JSON object, got {type(payload).__name__}")
        try:
            data = handler(payload)
        except ApiError as e:
            return self._reply(False, e.code, e.message)
        except Exception as e:  # noqa: BLE001 -- the server keeps serving; the caller gets the error text
            self._logger.exception(f"{self.name}: handler of /{endpoint} failed")
            return self._reply(False, 500, f"{type(e).__name__}: {e}")
        return self._reply(True, 200, "", data)

    def _http_error(self, e: Any) -> Any:
        return self._reply(False, e.code, _HTTP_ERRORS[e.code])

    def start(self) -> None:
        # bind the socket here: werkzeug reports a busy port by printing and calling sys.exit
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
            sock.listen(128)
        except OSError as e:
            sock.close()
            if e.errno == errno.EADDRNOTAVAIL:
                what = (f"this host has no address {self.host}: bind one of its own addresses (0.0.0.0: all of "
                        "them; advertise_host: the address the others use)")
            else:
                what = "choose another port (or 0 for a free one) or stop the process that holds it"
            raise InteractionError(
                f"{self.name}: cannot listen on {self.host}:{self._requested_port} ({e.strerror or e}); {what}"
            ) from e
        try:
            self._server = BoundedWSGIServer(self.host, sock.getsockname()[1], self.app, fd=sock.fileno(),
                                             limits=self.limits, refusals=self.refusals, name=self.name,
                                             token=self._token)
        finally:
            sock.close()  # werkzeug holds its own duplicate of the descriptor
        self._thread = spawn(self._server.serve, f"ding-http-{self.name}")

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{self.name}: the server is not started")
        return int(self._server.port)

    def close(self) -> None:
        """Stop serving and release the port (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._server is not None and self._thread is not None:  # (started)
            self._server.stop(timeout=5.0)
            self._thread.join(timeout=5.0)
            self._server.server_close()
        self.refusals.flush()


def __getattr__(name: str) -> Any:
    # DI-engine's ``ding.parallel.transport.base`` names, kept in their own module (it imports this one)
    from ding.parallel.transport import responses

    if name in responses.__all__:
        return getattr(responses, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
