"""One supervisor for a parallel run's role processes, local (``ding -m parallel``) or Slurm steps (``-P slurm``).

:class:`RoleSupervisor` starts each role, restarts one that ends while the run goes on (``system_config.max_restarts``
times; a collector that runs out of them while others run is let go; a lost member of a learner group ends the run,
whose other members are stopped at once: a group cannot take a new member), and on the way out stops what is left:
SIGTERM, then SIGKILL, also after an error or a Ctrl-C. How one role is started and named is a :class:`Starter`.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Role(Protocol):
    """A role to run: its name (``learner0``) and kind (``learner``, ``collector``, ``coordinator``)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


@dataclass(frozen=True)
class RoleId:
    name: str
    role: str


class Process(Protocol):
    """A started role as the supervisor watches it (:class:`subprocess.Popen`'s surface)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...


class Starter(Protocol):
    """How to start one role: a local process or a Slurm step."""

    what: str  # how messages call a started role after its kind: '' (a process), ' step'
    clean_exit_ends: bool  # a role that exits with code 0 was told to (it is not restarted)
    end_now: int  # the signal that ends a learner group's member now

    def start(self, role: Role, log_path: str | None) -> Process:
        """Start ``role`` with its output in ``log_path`` (None: this process's output)."""

    def close(self) -> None:
        """Called once every role it started has ended: drop whatever else is left of them."""


def role_log(exp_dir: str, name: str) -> str:
    """``<exp_dir>/log/<name>/process.log``, its directory created."""
    log_dir = os.path.join(exp_dir, "log", name)
    os.makedirs(log_dir, exist_ok=True)
    return os.path.join(log_dir, "process.log")


class _Child:
    def __init__(self, role: Role, log_path: str | None) -> None:
        self.role, self.log_path = role, log_path
        self.proc: Process | None = None
        self.restarts = 0

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 12) -> str:
        if self.log_path is None:
            return "(its output is above)"
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(deque(f, maxlen=n)).rstrip()
        except OSError:
            return "(no log)"


def _stderr(message: str) -> None:
    print(f"ding: {message}", file=sys.stderr, flush=True)


class RoleSupervisor:
    """The role processes of one run. A context manager: leaving it stops every role still running. As the
    driver's :class:`~ding.parallel.launch.driver.Supervisor`, :meth:`tick` watches and :meth:`abort` stops now."""

    def __init__(self, starter: Starter, exp_dir: str, max_restarts: int) -> None:
        self.starter, self.exp_dir, self.max_restarts = starter, exp_dir, int(max_restarts)
        self.children: dict[str, _Child] = {}
        self.failure: str | None = None  # why the run ends: a role kept failing
        self._say: Callable[[str], None] = _stderr
        self._fail: Callable[[str], None] = _stderr
        self._ending: Callable[[], bool] = lambda: False

    def report_to(self, say: Callable[[str], None], fail: Callable[[str], None], ending: Callable[[], bool]) -> None:
        """Where :meth:`tick` reports a restart (``say``) and a failure that ends the run (``fail``); while
        ``ending()`` the run is ending and nothing is restarted."""
        self._say, self._fail, self._ending = say, fail, ending

    def __enter__(self) -> RoleSupervisor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop(grace=0.0 if exc[0] is not None else 30.0)

    def start(self, role: Role, log: bool = True) -> _Child:
        child = self.children.get(role.name)
        if child is None:
            child = self.children[role.name] = _Child(role, role_log(self.exp_dir, role.name) if log else None)
        child.proc = self.starter.start(child.role, child.log_path)
        return child

    def alive(self) -> list[_Child]:
        return [c for c in self.children.values() if c.running()]

    def pids(self) -> list[int]:
        return [c.proc.pid for c in self.alive() if c.proc is not None]

    def tick(self) -> None:
        """Restart each role (not the coordinator: its end is the run's) that ended while the run goes on; once
        one ran out of restarts, report the failure and watch no more."""
        if self.failure is not None or self._ending():
            return
        for child in list(self.children.values()):
            if child.role.role == "coordinator" or child.proc is None or child.running():
                continue
            code = int(child.proc.returncode or 0)
            child.proc = None
            if code == 0 and self.starter.clean_exit_ends:
                continue
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            who = f"{child.role.role}{self.starter.what} '{child.role.name}'"
            group = [c for c in self.children.values() if c.role.role == "learner"]
            if child.role.role == "learner" and len(group) > 1:  # a torch.distributed group cannot take a new member
                self._failed(f"{who} (one of {len(group)} learners sharing gradients) {how}; a learner group is not "
                             "rebuilt (docs/distributed.md, Several learners): the run ends, resume it with --resume. "
                             f"Last lines of {child.log_path}:\n{child.tail()}")
                for other in group:  # the rest would wait in a collective with the lost member until group_timeout
                    if other.running() and other.proc is not None:  # (their checkpoints on disk are whole)
                        self._say(f"stopping learner{self.starter.what} '{other.role.name}' (its learner group "
                                  f"lost '{child.role.name}')")
                        other.proc.send_signal(self.starter.end_now)
                return
            if child.restarts >= self.max_restarts:
                if child.role.role == "collector" and any(c.role.role == "collector" for c in self.alive()):
                    self._say(f"{who} {how}; not restarted (max_restarts {self.max_restarts}); the other collectors "
                              "go on")
                    continue
                self._failed(f"{who} {how} and was restarted {child.restarts} times already; giving up. Last lines "
                             f"of {child.log_path}:\n{child.tail()}")
                return
            child.restarts += 1
            self._say(f"{who} {how}; restarting it ({child.restarts}/{self.max_restarts})")
            self.start(child.role)

    def _failed(self, message: str) -> None:
        self.failure = message
        self._fail(message)

    def abort(self) -> None:
        self.stop(grace=0.0, term_wait=2.0)

    def stop(self, grace: float = 30.0, term_wait: float = 10.0) -> None:
        """Wait up to ``grace`` seconds for the roles to end by themselves (a Ctrl-C cuts this short, not the
        stopping), SIGTERM what is left, SIGKILL it after ``term_wait`` seconds, reap them all; then the starter
        drops what else is left."""
        try:
            self._wait(grace)
        except KeyboardInterrupt:
            pass
        for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, 5.0)):
            left = self.alive()
            if not left:
                break
            for child in left:
                try:
                    assert child.proc is not None
                    child.proc.send_signal(sig)
                except ProcessLookupError:
                    pass
            self._wait(wait)
        for child in self.children.values():
            if child.proc is not None:
                try:
                    child.proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
        self.starter.close()

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
