"""The HTTP server under :class:`~ding.parallel.transport.base.JsonServer`: werkzeug's request handling, bounded.

werkzeug's development server gives every connection its own thread and never times a read out, so connections
that send nothing pile up threads and can starve real requests (a peer that is not even authenticated can do it).
Here instead:

- accepted connections wait, threadless, in one selector loop until their whole request head (request line and
  headers, at most ``max_head_bytes``) has arrived; one whose head is not complete within ``idle_timeout`` seconds of
  its accept is closed, however it drips (a byte every few seconds holds nothing), and while more than
  ``max_connections`` wait, the oldest are closed first (a real client sends its request at once, so it is never the
  oldest);
- a complete head without the server's token (``token``) is answered 401 by the loop itself and closed: only
  requests that present the token take one of the ``max_workers`` threads, so peers without it cannot starve them;
- there, each read of the body times out after ``read_timeout`` seconds, the whole exchange after
  ``request_timeout`` seconds (every ding endpoint answers in milliseconds: tasks run in the slave's own worker
  threads);
- refusals (a wrong token, a malformed request, an idle or overlong connection) are logged rate-limited: the first
  of each kind at once, then one summary line with the count per ``log_interval`` seconds.

werkzeug answers every request with ``Connection: close``, so a connection carries exactly one request.
"""
from __future__ import annotations

import hmac
import io
import logging
import queue
import re
import selectors
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler


@dataclass(frozen=True)
class ServerLimits:
    """What one HTTP server of parallel mode may spend on its peers (see the module docstring)."""

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
        head = self.server.take_head(self.connection)
        if head:  # the loop already read the request head: werkzeug reads it again from here, then the socket
            self.rfile = io.BufferedReader(_Prefixed(head, self.rfile))

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 -- the base class's signature
        self.server.refusals.note("malformed request", format % args if args else format, self.address_string())

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        self.server.refusals.note("server message", format % args if args else format, self.address_string())

    def connection_dropped(self, error: BaseException, environ: Any = None) -> None:
        self.server.refusals.note("connection dropped", f"{type(error).__name__}: {error}", self.address_string())


class BoundedWSGIServer(BaseWSGIServer):
    """A WSGI server with a fixed pool of request threads and a selector loop for waiting connections.

    ``serve()`` runs the loop (in the caller's thread) until ``stop()``; ``server_close()`` releases the port.
    """

    multithread = True  # requests are served concurrently (werkzeug then speaks HTTP/1.1)

    def __init__(self, host: str, port: int, app: Any, fd: int, limits: ServerLimits, refusals: RateLimitedLog,
                 name: str, token: bytes | None = None) -> None:
        super().__init__(host, port, app, handler=QuietHandler, fd=fd)
        self.limits = limits
        self._token = token
        self._heads: dict[socket.socket, bytes] = {}  # what the loop read of each waiting connection
        self._heads_lock = threading.Lock()
        self.refusals = refusals
        self._name = name
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._jobs: queue.Queue = queue.Queue()
        self._waiting: dict[socket.socket, tuple[Any, float]] = {}  # insertion order: oldest first
        self._active: dict[socket.socket, float] = {}
        self._active_lock = threading.Lock()
        self._workers = [threading.Thread(target=self._work, name=f"ding-http-{name}-{i}", daemon=True)
                         for i in range(max(1, int(limits.max_workers)))]
        for t in self._workers:
            t.start()

    # ---------------------------------------------------------------- the selector loop
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
                    self._trim(sel)
                self._expire(sel)
        finally:
            for conn in list(self._waiting):
                self._drop(conn)
            self._waiting.clear()
            with self._heads_lock:
                self._heads.clear()
            sel.close()
            self._stopped.set()

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
        """Read what a waiting connection sent; once its head is complete, hand it to a worker (token given) or
        answer 401 here (no token, or a wrong one)."""
        with self._heads_lock:
            head = self._heads.get(conn, b"")
        try:
            chunk = conn.recv(self.limits.max_head_bytes + 1 - len(head))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        addr, _ = self._waiting[conn]
        if not chunk:  # closed by the peer
            self._forget(sel, conn)
            self._drop(conn)
            return
        head += chunk
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > self.limits.max_head_bytes:
                self._forget(sel, conn)
                self._drop(conn)
                self.refusals.note("malformed request", f"request head over {self.limits.max_head_bytes} bytes",
                                   _peer(addr))
                return
            with self._heads_lock:
                self._heads[conn] = head
            return
        sel.unregister(conn)
        self._waiting.pop(conn)
        if self._token is not None and not _has_token(head[:end], self._token):
            with self._heads_lock:
                self._heads.pop(conn, None)
            if _REQUEST_LINE.match(head[:head.find(b"\r\n")]):
                self.refusals.note("rejected request", "missing or wrong token", _peer(addr))
            else:
                self.refusals.note("malformed request", "not an HTTP request", _peer(addr))
            try:
                conn.send(_UNAUTHORIZED_RESPONSE)  # (small: fits the socket's send buffer)
            except OSError:
                pass
            self._drop(conn)
            return
        with self._heads_lock:
            self._heads[conn] = head
        self._jobs.put((conn, addr))

    def _forget(self, sel: selectors.BaseSelector, conn: Any) -> None:
        sel.unregister(conn)
        self._waiting.pop(conn, None)
        with self._heads_lock:
            self._heads.pop(conn, None)

    def take_head(self, conn: Any) -> bytes:
        """What the loop read of ``conn`` (its request head and what came with it); for the worker's handler."""
        with self._heads_lock:
            return self._heads.pop(conn, b"")

    def _trim(self, sel: selectors.BaseSelector) -> None:
        while len(self._waiting) > self.limits.max_connections:
            oldest = next(iter(self._waiting))
            addr, _ = self._waiting[oldest]
            self._forget(sel, oldest)
            self._drop(oldest)
            self.refusals.note("connection closed unserved", f"more than {self.limits.max_connections} connections "
                               "waited to send a request; the oldest is closed", _peer(addr))

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
            self._waiting[conn] = (addr, time.monotonic())
            sel.register(conn, selectors.EVENT_READ, "conn")

    def _expire(self, sel: selectors.BaseSelector) -> None:
        now = time.monotonic()
        for conn, (addr, since) in list(self._waiting.items()):
            if now - since <= self.limits.idle_timeout:
                break  # the rest are younger
            with self._heads_lock:
                partial = conn in self._heads
            self._forget(sel, conn)
            self._drop(conn)
            self.refusals.note("idle connection closed", f"sent no {'whole request head' if partial else 'request'} "
                               f"within {self.limits.idle_timeout:g} s", _peer(addr))
        with self._active_lock:
            overdue = [c for c, t in self._active.items() if now - t > self.limits.request_timeout]
        for conn in overdue:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # the worker's next read or write fails; it closes the connection
            except OSError:
                pass
            self.refusals.note("request cut off", f"took longer than {self.limits.request_timeout:g} s", "-")

    # ---------------------------------------------------------------- the workers
    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            conn, addr = job
            conn.setblocking(True)
            conn.settimeout(self.limits.read_timeout)
            with self._active_lock:
                self._active[conn] = time.monotonic()
            try:
                self.finish_request(conn, addr)
            except Exception as e:  # noqa: BLE001 -- one connection's failure must not end the worker
                self.refusals.note("request failed", f"{type(e).__name__}: {e}", _peer(addr))
            finally:
                with self._active_lock:
                    self._active.pop(conn, None)
                self.shutdown_request(conn)

    def _drop(self, conn: socket.socket) -> None:
        try:
            conn.close()
        except OSError:
            pass

    # ---------------------------------------------------------------- lifecycle
    def stop(self, timeout: float = 5.0, grace: float = 1.0) -> None:
        """End the loop and the workers: requests in service get ``grace`` seconds to finish (a ``disconnect`` that
        closes this very server still gets its answer), then their connections are cut; waits up to ``timeout``."""
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        end = time.monotonic() + grace
        while time.monotonic() < end:
            with self._active_lock:
                if not self._active:
                    break
            time.sleep(0.01)
        with self._active_lock:
            active = list(self._active)
        for conn in active:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for _ in self._workers:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for t in self._workers:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        while True:  # connections handed over but never served
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                self._drop(job[0])

    def server_close(self) -> None:
        super().server_close()
        for s in (getattr(self, "_wake_r", None), getattr(self, "_wake_w", None)):  # (also called by the base init)
            if s is not None:
                s.close()


def _peer(addr: Any) -> str:
    return str(addr[0]) if isinstance(addr, tuple) and addr else str(addr)


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
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = self._rest.read1(len(buffer)) if hasattr(self._rest, "read1") else self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
