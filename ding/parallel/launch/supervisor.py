"""The one supervisor of a run's role processes, local or Slurm steps: it starts each role, restarts one that ends
while the run goes on, and on the way out stops what is left (SIGTERM, then SIGKILL)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Protocol

PARENT_PID_ENV = "DING_PARENT_PID"  # set by ding -m parallel: its roles die with it (dist.die_with_parent)
_ROLE_NAME = re.compile(r"(learner|collector)\d+")


@dataclass(frozen=True)
class RoleId:
    """A role to run: its name (``learner0``) and kind (``learner``, ``collector``, ``coordinator``)."""

    name: str
    role: str


def roles_of(system: Mapping) -> list[RoleId]:
    """The learners and collectors of ``system_config`` (its ``learnerN`` / ``collectorN`` keys), in its order."""
    return [RoleId(str(k), str(k).rstrip("0123456789")) for k in system if _ROLE_NAME.fullmatch(str(k))]


def role_env(token: str, launcher_pid: int | None = None) -> dict[str, str]:
    """A role's environment: this one, the run's token (never on a command line), unbuffered output, the directory the
    config's ``import_names`` are found from, and ``launcher_pid``, the process the role dies with."""
    from ding.parallel.transport import TOKEN_ENV
    from ding.utils.import_dirs import CONFIG_DIR_ENV, config_dir

    env = {**os.environ, TOKEN_ENV: token, "PYTHONUNBUFFERED": "1"}
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see docs/benchmarks.md, 'thread trap'
    if config_dir():
        env[CONFIG_DIR_ENV] = str(config_dir())
    if launcher_pid is not None:
        env[PARENT_PID_ENV] = str(launcher_pid)
    return env


class Process(Protocol):
    """A started role as the supervisor watches it (:class:`subprocess.Popen`'s surface)."""

    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...


class Starter(Protocol):
    """How to start one role (a local process, a Slurm step), its output in ``log_path`` (None: this process's)."""

    what: str  # how messages call a started role after its kind: '' (a process), ' step'
    clean_exit_ends: bool  # a role that exits with code 0 was told to (it is not restarted)
    end_now: int  # the signal that ends a learner group's member now

    def start(self, role: RoleId, log_path: str | None) -> Process: ...
    def close(self) -> None: ...  # drop what is left once every role it started has ended


def role_log(exp_dir: str, name: str) -> str:
    """``<exp_dir>/log/<name>/process.log``, its directory created."""
    log_dir = os.path.join(exp_dir, "log", name)
    os.makedirs(log_dir, exist_ok=True)
    return os.path.join(log_dir, "process.log")


def stderr_line(message: str) -> None:
    print(f"ding: {message}", file=sys.stderr, flush=True)


def popen_logged(cmd: list[str], env: dict[str, str], log_path: str | None, header: str = "") -> subprocess.Popen:
    """Start ``cmd`` in its own session, its output appended to ``log_path`` after ``header`` (None: ours)."""
    if log_path is None:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    with open(log_path, "ab") as log:
        log.write(header.encode())
        log.flush()
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


@dataclass
class _Child:
    role: RoleId
    log_path: str | None
    proc: Process | None = None
    restarts: int = 0

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self) -> str:
        if self.log_path is None:
            return "(its output is above)"
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(deque(f, maxlen=12)).rstrip()
        except OSError:
            return "(no log)"


class RoleSupervisor:
    """The role processes of one run; leaving it as a context manager stops every role still running."""

    def __init__(self, starter: Starter, exp_dir: str, max_restarts: int) -> None:
        self.starter, self.exp_dir, self.max_restarts = starter, exp_dir, int(max_restarts)
        self.children: dict[str, _Child] = {}
        self.failure: str | None = None  # why the run ends: a role kept failing
        self.report_to(stderr_line, stderr_line, lambda: False)

    def report_to(self, say: Callable[[str], None], fail: Callable[[str], None], ending: Callable[[], bool]) -> None:
        """Where :meth:`tick` reports a restart and a failure that ends the run; while ``ending()`` none restarts."""
        self._say, self._fail, self._ending = say, fail, ending

    def __enter__(self) -> RoleSupervisor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop(grace=0.0 if exc[0] is not None else 30.0)

    def start(self, role: RoleId, log: bool = True) -> _Child:
        child = self.children.get(role.name)
        if child is None:
            child = self.children[role.name] = _Child(role, role_log(self.exp_dir, role.name) if log else None)
        child.proc = self.starter.start(child.role, child.log_path)
        return child

    def alive(self) -> list[_Child]:
        return [c for c in self.children.values() if c.running()]

    def tick(self) -> None:
        """Restart each role (not the coordinator) that ended while the run goes on. A collector out of restarts is let
        go while others run; any other role out of them, or a lost learner group member, ends the run (reported)."""
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
            if child.role.role == "learner" and len(group) > 1:
                self._failed(f"{who} (one of {len(group)} learners sharing gradients) {how}; a learner group is not "
                             "rebuilt (docs/distributed.md, Several learners): the run ends, resume it with --resume. "
                             f"Last lines of {child.log_path}:\n{child.tail()}")
                for other in group:  # else they wait in a collective with the lost member until group_timeout
                    if other.running() and other.proc is not None:
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
        """Wait ``grace`` s for the roles to end (a Ctrl-C cuts this short), SIGTERM what is left, SIGKILL it after
        ``term_wait`` s, reap them all, then close the starter."""
        with suppress(KeyboardInterrupt):
            self._wait(grace)
        for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, 5.0)):
            for child in self.alive():
                with suppress(ProcessLookupError):
                    assert child.proc is not None
                    child.proc.send_signal(sig)
            self._wait(wait)
        for child in self.children.values():
            if child.proc is not None:
                with suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=1.0)
        self.starter.close()

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
