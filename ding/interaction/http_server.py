"""The HTTP server under :class:`~ding.interaction.base.JsonServer`: werkzeug's request handling, bounded.

werkzeug's development server gives every connection its own thread and never times a read out, so connections
that send nothing pile up threads and can starve real requests (a peer that is not even authenticated can do it).
Here instead:

- accepted connections wait, threadless, in one selector loop until they have data; one that sends nothing within
  ``idle_timeout`` seconds is closed, and while more than ``max_connections`` wait, the oldest are closed first
  (a real client sends its request at once, so it is never the oldest);
- a connection with data is served by one of ``max_workers`` threads, each read timing out after ``read_timeout``
  seconds, the whole exchange after ``request_timeout`` seconds (every ding endpoint answers in milliseconds: tasks
  run in the slave's own worker threads);
- refusals (a wrong token, a malformed request, an idle or overlong connection) are logged rate-limited: the first
  of each kind at once, then one summary line with the count per ``log_interval`` seconds.

werkzeug answers every request with ``Connection: close``, so a connection carries exactly one request.
"""
from __future__ import annotations

import logging
import queue
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
                 name: str) -> None:
        super().__init__(host, port, app, handler=QuietHandler, fd=fd)
        self.limits = limits
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
                conn = key.fileobj
                sel.unregister(conn)
                addr, _ = self._waiting.pop(conn)
                self._jobs.put((conn, addr))

    def _trim(self, sel: selectors.BaseSelector) -> None:
        while len(self._waiting) > self.limits.max_connections:
            oldest = next(iter(self._waiting))
            addr, _ = self._waiting.pop(oldest)
            sel.unregister(oldest)
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
            del self._waiting[conn]
            sel.unregister(conn)
            self._drop(conn)
            self.refusals.note("idle connection closed", f"sent no request within {self.limits.idle_timeout:g} s",
                               _peer(addr))
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
