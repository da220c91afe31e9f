"""The bounded HTTP server under :class:`~ding.parallel.transport.base.JsonServer` (docs/parallel.md, 'HTTP servers
are bounded'): a selector loop holds connections, threadless, until their request head is whole; only a head with the
token takes one of a fixed pool of workers (werkzeug then serves it, one request per connection).
"""
from __future__ import annotations

import contextlib
import hmac
import io
import logging
import queue
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler


@dataclass(frozen=True)
class ServerLimits:
    """What one HTTP server may spend on its peers: a request head (at most ``max_head_bytes``) must be whole within
    ``idle_timeout`` s of the accept, and past ``max_connections`` waiting the oldest are closed; a worker's reads time
    out after ``read_timeout`` s, its request after ``request_timeout`` s. Refusals are logged once per
    ``log_interval`` s."""

    max_workers: int = 32
    max_connections: int = 256
    idle_timeout: float = 10.0
    read_timeout: float = 10.0
    request_timeout: float = 60.0
    log_interval: float = 60.0
    max_head_bytes: int = 64 * 1024


TOKEN_HEADER_LINE = b"x-ding-token:"
_REQUEST_LINE = re.compile(rb"^[A-Z]+ \S+ HTTP/\d\.\d$")
_UNAUTHORIZED = (b'{"success": false, "code": 401, "message": "missing or wrong X-Ding-Token header", "data": {}}')
_UNAUTHORIZED_RESPONSE = (b"HTTP/1.1 401 UNAUTHORIZED\r\nContent-Type: application/json\r\nConnection: close\r\n"
                          b"Content-Length: " + str(len(_UNAUTHORIZED)).encode() + b"\r\n\r\n" + _UNAUTHORIZED)


def spawn(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    """Run ``target(*args)`` in a new daemon thread (the process does not wait for it at exit)."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


class RateLimitedLog:
    """Log lines of a kind at most once per ``interval`` seconds; the rest are counted and summarised."""

    def __init__(self, logger: logging.Logger, name: str, interval: float) -> None:
        self._logger, self._name, self._interval = logger, name, float(interval)
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._held: dict[str, tuple[int, set[str]]] = {}
        self.counts: dict[str, int] = {}

    def note(self, kind: str, detail: str, peer: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if now - self._last.get(kind, -float("inf")) < self._interval:
                n, peers = self._held.get(kind, (0, set()))
                if len(peers) < 5:
                    peers.add(peer)
                self._held[kind] = (n + 1, peers)
                return
            self._last[kind] = now
            held = self._held.pop(kind, None)
        more = f" ({held[0]} more since the last report, from {', '.join(sorted(held[1]))})" if held else ""
        self._logger.warning(f"{self._name}: {kind} from {peer}: {detail}{more}; such events are logged at most "
                             f"once per {self._interval:g} s")

    def flush(self) -> None:
        """Log what is held back (at close)."""
        with self._lock:
            held, self._held = self._held, {}
        for kind, (n, peers) in held.items():
            self._logger.warning(f"{self._name}: {n} more {kind} events (from {', '.join(sorted(peers))})")


class QuietHandler(WSGIRequestHandler):
    """werkzeug's handler without a line per request; its error lines go through the server's rate-limited log."""

    server: BoundedWSGIServer

    def setup(self) -> None:
        super().setup()
        # the loop already read the request head: werkzeug reads it again from here, then from the socket
        self.rfile = io.BufferedReader(_Prefixed(self.server.heads.head, self.rfile))

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 -- the base class's signature
        self.server.refusals.note("malformed request", format % args if args else format, self.address_string())

    def connection_dropped(self, error: BaseException, environ: Any = None) -> None:
        self.server.refusals.note("connection dropped", f"{type(error).__name__}: {error}", self.address_string())


class BoundedWSGIServer(BaseWSGIServer):
    """A WSGI server with a fixed pool of request threads; ``serve()`` runs the selector loop until ``stop()``."""

    multithread = True  # requests are served concurrently (werkzeug then speaks HTTP/1.1)

    def __init__(self, host: str, port: int, app: Any, fd: int, limits: ServerLimits, refusals: RateLimitedLog,
                 name: str, token: bytes) -> None:
        super().__init__(host, port, app, handler=QuietHandler, fd=fd)
        self.limits, self.refusals, self._token = limits, refusals, token
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._jobs: queue.Queue = queue.Queue()
        # waiting connections -> (address, accept time, what they sent so far); insertion order: oldest first
        self._waiting: dict[socket.socket, tuple[Any, float, bytes]] = {}
        self._active: dict[socket.socket, float] = {}  # connections in a worker -> since when
        self._active_lock = threading.Lock()
        self.heads = threading.local()  # the head of the request a worker thread serves
        self._workers = [spawn(self._work, f"ding-http-{name}-{i}") for i in range(max(1, int(limits.max_workers)))]

    def serve(self) -> None:
        sel = selectors.DefaultSelector()
        self.socket.setblocking(False)
        sel.register(self.socket, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._stop.is_set():
                self._dispatch(sel, sel.select(timeout=0.2))
                if len(self._waiting) > self.limits.max_connections:
                    self._dispatch(sel, sel.select(timeout=0), accept=False)  # serve what has data, then trim
                    while len(self._waiting) > self.limits.max_connections:
                        addr = self._discard(sel, next(iter(self._waiting)))
                        self.refusals.note("connection closed unserved", f"more than {self.limits.max_connections} "
                                           "connections waited to send a request; the oldest is closed", addr)
                self._expire(sel)
        finally:
            for conn in self._waiting:
                _close(conn)
            self._waiting.clear()
            sel.close()

    def _dispatch(self, sel: selectors.BaseSelector, events: list, accept: bool = True) -> None:
        for key, _ in events:
            if key.data == "listen":
                if accept:
                    self._accept(sel)
            elif key.data == "wake":
                self._wake_r.recv(4096)
            else:
                self._read_head(sel, key.fileobj)

    def _read_head(self, sel: selectors.BaseSelector, conn: Any) -> None:
        """Read what a waiting connection sent; once its head is complete, hand it to a worker (the token given) or
        answer 401 here."""
        addr, since, head = self._waiting[conn]
        try:
            chunk = conn.recv(self.limits.max_head_bytes + 1 - len(head))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # closed by the peer
            self._discard(sel, conn)
            return
        head += chunk
        end = head.find(b"\r\n\r\n")
        if end < 0 and len(head) > self.limits.max_head_bytes:
            self.refusals.note("malformed request", f"request head over {self.limits.max_head_bytes} bytes",
                               self._discard(sel, conn))
        elif end < 0:
            self._waiting[conn] = (addr, since, head)
        elif not _has_token(head[:end], self._token):
            peer = self._discard(sel, conn, close=False)
            if _REQUEST_LINE.match(head[:head.find(b"\r\n")]):
                self.refusals.note("rejected request", "missing or wrong token", peer)
            else:
                self.refusals.note("malformed request", "not an HTTP request", peer)
            with contextlib.suppress(OSError):
                conn.send(_UNAUTHORIZED_RESPONSE)  # (small: fits the socket's send buffer)
            _close(conn)
        else:
            self._discard(sel, conn, close=False)
            self._jobs.put((conn, addr, head))

    def _discard(self, sel: selectors.BaseSelector, conn: Any, close: bool = True) -> str:
        """Stop waiting on ``conn`` (and close it); its peer's address, for the log."""
        sel.unregister(conn)
        addr = self._waiting.pop(conn)[0]
        if close:
            _close(conn)
        return str(addr[0]) if isinstance(addr, tuple) and addr else str(addr)

    def _accept(self, sel: selectors.BaseSelector) -> None:
        for _ in range(256):  # take what the backlog holds, but let the loop breathe
            try:
                conn, addr = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. out of file descriptors: keep serving the connections we have
                self.refusals.note("failed accept", str(e), "-")
                return
            conn.setblocking(False)
            self._waiting[conn] = (addr, time.monotonic(), b"")
            sel.register(conn, selectors.EVENT_READ, "conn")

    def _expire(self, sel: selectors.BaseSelector) -> None:
        now = time.monotonic()
        for conn, (_, since, head) in list(self._waiting.items()):
            if now - since <= self.limits.idle_timeout:
                break  # the rest are younger
            self.refusals.note("idle connection closed", f"sent no {'whole request head' if head else 'request'} "
                               f"within {self.limits.idle_timeout:g} s", self._discard(sel, conn))
        with self._active_lock:
            overdue = [c for c, t in self._active.items() if now - t > self.limits.request_timeout]
        for conn in overdue:
            _cut(conn)  # the worker's next read or write fails; it closes the connection
            self.refusals.note("request cut off", f"took longer than {self.limits.request_timeout:g} s", "-")

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            conn, addr, self.heads.head = job
            conn.setblocking(True)
            conn.settimeout(self.limits.read_timeout)
            with self._active_lock:
                self._active[conn] = time.monotonic()
            try:
                self.finish_request(conn, addr)
            except Exception as e:  # noqa: BLE001 -- one connection's failure must not end the worker
                self.refusals.note("request failed", f"{type(e).__name__}: {e}", str(addr[0]))
            finally:
                with self._active_lock:
                    self._active.pop(conn, None)
                self.shutdown_request(conn)

    def stop(self, timeout: float = 5.0, grace: float = 1.0) -> None:
        """End the loop and the workers: requests in service get ``grace`` seconds to finish (a ``disconnect`` that
        closes this very server still gets its answer), then their connections are cut; waits up to ``timeout``."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        end = time.monotonic() + grace
        while self._active and time.monotonic() < end:
            time.sleep(0.01)
        with self._active_lock:
            active = list(self._active)
        for conn in active:
            _cut(conn)
        for _ in self._workers:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for t in self._workers:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(queue.Empty):
            while True:  # connections handed over but never served
                job = self._jobs.get_nowait()
                if job is not None:
                    _close(job[0])

    def server_close(self) -> None:
        super().server_close()
        for s in (getattr(self, "_wake_r", None), getattr(self, "_wake_w", None)):  # (also called by the base init)
            if s is not None:
                s.close()


def _close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.close()


def _cut(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


def _has_token(head: bytes, token: bytes) -> bool:
    """Whether the request head carries ``X-Ding-Token: <token>`` (compared in constant time)."""
    for line in head.split(b"\r\n")[1:]:
        if line[:len(TOKEN_HEADER_LINE)].lower() == TOKEN_HEADER_LINE:
            return hmac.compare_digest(line[len(TOKEN_HEADER_LINE):].strip(), token)
    return False


class _Prefixed(io.RawIOBase):
    """A stream that yields ``prefix``, then what ``rest`` yields (the head the loop read, then the socket)."""

    def __init__(self, prefix: bytes, rest: Any) -> None:
        self._prefix = memoryview(prefix)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._prefix:
            data: Any = self._prefix[:len(buffer)]
            self._prefix = self._prefix[len(data):]
        else:
            data = self._rest.read1(len(buffer))
        buffer[:len(data)] = data
        return len(data)
