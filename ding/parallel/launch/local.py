"""The local launcher (``ding -m parallel``, ``parallel_pipeline``): a coordinator in this process, learner and
collectors as local child processes on free loopback ports, until an evaluation reaches the stop value.

Every child is started with its role in its command line and process name (``ding-learner0``, ``ding-collector1``),
in its own session (a terminal's Ctrl-C reaches only this launcher, which then ends the run in order: the learner
writes its checkpoint, every role shuts down), and dies with the launcher if the launcher dies. A child that crashes
is restarted (``system_config.max_restarts`` times): a collector's lost task goes to another collector, a learner
continues from the run's latest checkpoint. Nothing is left running when this module's launch returns or raises.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ding.config import compile_config_parallel, rename_experiment
from ding.engine.resume import lock_run_dir, resume_dir
from ding.parallel.launch.cpu_placement import (
    PLACEMENT_ENV,
    CpuPlacement,
    PlacementGovernor,
    RunTree,
    allowed_cpus,
    pin_process,
    plan_placement,
)
from ding.parallel.launch.driver import check_resumable, drive_coordinator, read_state
from ding.parallel.launch.forked_roles import ForkedRole, can_fork, fork_role, preload_role_modules
from ding.parallel.launch.role_process import PARENT_PID_ENV
from ding.parallel.transport import TOKEN_ENV, new_token
from ding.utils import ConfigError, DirLock, ResumeError
from ding.utils.import_dirs import CONFIG_DIR_ENV, config_dir
from ding.utils.torch_threads import requested_torch_threads


class _Child:
    """One role process and its log file."""

    def __init__(self, name: str, role: str, log_path: str) -> None:
        self.name, self.role, self.log_path = name, role, log_path
        self.proc: subprocess.Popen | ForkedRole | None = None
        self.restarts = 0

    def tail(self, n: int = 12) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(deque(f, maxlen=n)).rstrip()
        except OSError:
            return "(no log)"


class LocalProcesses:
    """Starts, watches, restarts and finally stops the local role processes. A context manager: leaving it kills
    whatever is still running."""

    def __init__(self, config_path: str, exp_name: str, token: str, max_restarts: int,
                 placement: CpuPlacement | None = None) -> None:
        self._config_path = config_path
        self._placement = placement  # the run's CPU placement, handed to every role it starts (or restarts)
        self._exp_name = exp_name
        self._host, self._port = "", 0  # the coordinator's address: set by listening_at() once it listens
        self._token = token
        self.max_restarts = int(max_restarts)
        self.children: dict[str, _Child] = {}
        self._forked: dict[str, ForkedRole] = {}  # forked before the coordinator listened, not released yet

    def __enter__(self) -> LocalProcesses:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop(grace=0.0 if exc[0] is not None else 30.0)

    def pids(self) -> list[int]:
        """The process ids of the role processes running now."""
        return [c.proc.pid for c in self.children.values() if c.proc is not None and c.proc.poll() is None]

    def _child(self, name: str, role: str) -> _Child:
        child = self.children.get(name)
        if child is None:
            log_dir = os.path.join(self._exp_name, "log", name)
            os.makedirs(log_dir, exist_ok=True)
            child = self.children[name] = _Child(name, role, os.path.join(log_dir, "process.log"))
        return child

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env[TOKEN_ENV] = self._token
        env[PARENT_PID_ENV] = str(os.getpid())
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see docs/benchmarks.md, 'thread trap'
        env["PYTHONUNBUFFERED"] = "1"
        env.pop(PLACEMENT_ENV, None)  # (a placement of an outer run is not this run's)
        if self._placement is not None:
            env[PLACEMENT_ENV] = self._placement.to_env()
        if config_dir():  # every role looks for the config's import_names where the launcher does
            env[CONFIG_DIR_ENV] = str(config_dir())
        return env

    def _argv(self, name: str, role: str) -> list[str]:
        return ["-m", "dist", "--module", role, "--module-name", name, "-c", self._config_path]

    def prefork(self, roles: list[tuple[str, str]]) -> None:
        """Fork the first role processes now, while this process has no thread (see
        :mod:`ding.parallel.launch.forked_roles`): they skip the imports an exec'd role does. Where forking is not
        possible now (other threads run: a fork would copy their locks half-held), they are exec'd at :meth:`start`,
        as restarts always are, and one line says why."""
        reason = can_fork()
        if reason is not None:
            print(f"ding: the roles start by exec, not fork ({reason})", flush=True)
            return
        preload_role_modules()
        for name, role in roles:
            self._forked[name] = fork_role(self._argv(name, role), self._env(), self._child(name, role).log_path)

    def listening_at(self, host: str, port: int) -> None:
        self._host, self._port = host, int(port)

    def start(self, name: str, role: str) -> _Child:
        child = self._child(name, role)
        forked = self._forked.pop(name, None)
        if forked is not None and forked.poll() is None:
            forked.release(self._host, self._port)
            child.proc = forked
            return child
        cmd = [sys.executable, "-m", "ding", *self._argv(name, role), "--coordinator-host", self._host,
               "--coordinator-port", str(self._port)]
        with open(child.log_path, "ab") as log:
            child.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          env=self._env(), start_new_session=True)
        return child

    def exited(self) -> list[_Child]:
        """Children whose process ended since the last call."""
        out = []
        for child in self.children.values():
            if child.proc is not None and child.proc.poll() is not None:
                out.append(child)
        return out

    def alive(self) -> list[_Child]:
        return [c for c in self.children.values() if c.proc is not None and c.proc.poll() is None]

    def stop(self, grace: float = 30.0, term_wait: float = 10.0) -> None:
        """Wait up to ``grace`` seconds for the children to exit, then SIGTERM (and ``term_wait`` seconds), then
        SIGKILL; reap them all (forked children never released are told to exit first)."""
        for forked in self._forked.values():
            forked.discard()
            try:
                forked.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                forked.kill()
                forked.wait(timeout=5.0)
        self._forked.clear()
        deadline = time.monotonic() + grace
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
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
            deadline = time.monotonic() + wait
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
        for child in self.children.values():
            if child.proc is not None:
                try:
                    child.proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass


def launch_parallel(main: dict, create: dict, system: dict, *, seed: int = 0, source: str | None = None,
                    max_env_step: int | None = None, max_train_iter: int | None = None, resume: bool = False,
                    extend: bool = False, platform: str = "local") -> dict[str, Any]:
    """Compile the run's config and run it: local processes (``platform='local'``; ``resume`` continues the stopped
    run in ``./<exp_name>/``) or Slurm steps (:mod:`ding.parallel.launch.slurm`). Returns the run's result.
    ``extend`` and the limits are checked by the caller, before the config is read."""
    if platform not in ("local", "slurm"):
        raise ConfigError(f"parallel_pipeline: platform must be 'local' or 'slurm', got {platform!r}")
    if platform == "slurm":
        if resume:
            raise ResumeError("platform='slurm' does not resume a run yet: resume it with ding -m parallel --resume "
                              "or start a new one")
        from ding.parallel.launch.slurm import run_slurm

        return run_slurm(main, create, system, seed=seed, source=source, max_env_step=max_env_step,
                         max_train_iter=max_train_iter)
    if not resume:
        cfg = compile_config_parallel(main, create, system, seed=seed, source=source)  # claims ./<exp_name>/
        with DirLock(cfg.main.exp_name, what="run"):  # held for the run's life: no other ding run writes it
            return _run(cfg, max_env_step, max_train_iter)
    # resume: the run's directory is checked (checkpoint, state, not finished) and locked before anything is written
    exp_dir = resume_dir(str(main.get("exp_name") or "default_experiment"))
    with lock_run_dir(exp_dir, resume=True, exact=True):
        state = read_state(exp_dir)
        check_resumable(exp_dir, state, max_env_step, max_train_iter, extend)
        rename_experiment(main, system, exp_dir)  # data/policy paths under the config's name follow the run resumed
        cfg = compile_config_parallel(main, create, system, seed=seed, source=source, renew_dir=False)
        return _run(cfg, max_env_step, max_train_iter, resume_state=state, extend=extend)


def _run(cfg: Any, max_env_step: int | None, max_train_iter: int | None,
         resume_state: dict[str, Any] | None = None, extend: bool = False) -> dict[str, Any]:
    exp = cfg.main.exp_name
    token = cfg.system.get("auth_token") or os.environ.get(TOKEN_ENV) or new_token()
    roles = [(k, "learner" if k.startswith("learner") else "collector") for k in cfg.system
             if k.startswith(("learner", "collector")) and k[-1].isdigit()]

    placement, why = plan_run_placement(cfg, roles)
    print(f"ding: {why}", flush=True)
    with LocalProcesses(os.path.join(exp, "total_config.py"), exp, token, cfg.system.max_restarts,
                        placement) as procs, _Placed(placement) as placed:
        if _start_method(cfg) == "fork":  # before the coordinator starts its threads (docs/parallel.md)
            procs.prefork(roles)

        @contextmanager
        def local_roles(coordinator: Any) -> Iterator[_LocalRoles]:
            procs.listening_at(coordinator.host, coordinator.port)
            for name, role in roles:
                procs.start(name, role)
            placed.govern(procs.pids)  # (a thread: after the forks)
            yield _LocalRoles(procs, coordinator)

        return drive_coordinator(
            cfg, mode="parallel", token=token, max_env_step=max_env_step, max_train_iter=max_train_iter,
            resume_state=resume_state, supervise=local_roles, extend=extend)  # (ding -m parallel prints how to resume)


def plan_run_placement(cfg: Any, roles: list[tuple[str, str]]) -> tuple[CpuPlacement | None, str]:
    """The CPU placement of a local run of ``roles`` (:func:`plan_placement`): its processes are this launcher and
    one per role, so a machine with a CPU for each places nothing."""
    return plan_placement(str(cfg.system.get("cpu_affinity", "auto")),
                          [name for name, role in roles if role == "learner"], requested_torch_threads(),
                          processes=1 + len(roles))


class _Placed:
    """This process (it hosts the coordinator) and the run's roles placed by ``placement`` while the run lasts: moved
    off the trainers' CPUs and back by a :class:`PlacementGovernor` once the roles run (:meth:`govern`; a thread, so
    not before the roles are forked). This process's threads get their affinity back at the end (a caller of
    parallel_pipeline keeps its own)."""

    def __init__(self, placement: CpuPlacement | None) -> None:
        self.placement = placement
        self._before = allowed_cpus() or frozenset()
        self.governor: PlacementGovernor | None = None

    def __enter__(self) -> _Placed:
        return self

    def govern(self, roles: Callable[[], list[int]]) -> None:
        """Start moving the run's processes: this one and ``roles()`` (the role processes) with what runs under them;
        nothing else this process started."""
        if self.placement is None or self.governor is not None:
            return
        tree = RunTree(os.getpid(), list(self.placement.trainers.values()), roles=roles)
        self.governor = PlacementGovernor(frozenset().union(*self.placement.trainers.values()), self._before,
                                          tree.trainers, tree.others)
        self.governor.start()

    def __exit__(self, *exc: Any) -> None:
        if self.governor is not None:
            self.governor.close()
        if self.placement is not None:
            pin_process(self._before)


def _start_method(cfg: Any) -> str:
    """``system_config.role_start``: 'fork' (default where the OS has it; the roles skip their imports) or 'exec' (a
    fresh interpreter per role). A config that asks for CUDA is always exec'd: CUDA does not survive a fork."""
    method = cfg.system.get("role_start", "fork")  # (its values are checked with the system config)
    if method == "fork" and (cfg.main.policy.get("cuda") or not hasattr(os, "fork")):
        return "exec"
    return method


class _LocalRoles:
    """The launcher's part of the wait loop: restart a child that ended; on a second Ctrl-C, kill them all."""

    def __init__(self, procs: LocalProcesses, coordinator: Any) -> None:
        self.procs, self.coordinator = procs, coordinator

    def tick(self) -> None:
        _watch_children(self.procs, self.coordinator)

    def abort(self) -> None:
        self.procs.stop(grace=0.0, term_wait=2.0)


def _watch_children(procs: LocalProcesses, coordinator: Any) -> None:
    """Restart a child that ended while the run goes on; give up (ending the run) after ``max_restarts``."""
    for child in procs.exited():
        if coordinator.end_reason is not None:
            continue
        assert child.proc is not None
        code = int(child.proc.returncode or 0)  # (set: exited() polled it)
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        group = [c for c in procs.children.values() if c.role == "learner"]
        if child.role == "learner" and len(group) > 1:  # a torch.distributed group cannot take a new member
            child.proc = None
            coordinator._fatal(f"learner '{child.name}' (one of {len(group)} learners sharing gradients) {how}; a "
                               "learner group is not rebuilt (docs/distributed.md, Several learners): the run ends, "
                               f"resume it with --resume. Last lines of {child.log_path}:\n{child.tail()}")
            for other in group:  # the rest of the group is lost with it: a collective of theirs with the lost member
                if other.proc is not None and other.proc.poll() is None:  # could wait out group_timeout (300 s)
                    other.proc.kill()  # (their checkpoints on disk are whole: written atomically)
            continue
        if child.restarts >= procs.max_restarts:
            others = [c for c in procs.alive() if c.role == child.role]
            child.proc = None
            if child.role == "collector" and others:
                coordinator.notice(f"collector '{child.name}' {how}; not restarted (max_restarts "
                                 f"{procs.max_restarts}); the other collectors go on")
                continue
            coordinator._fatal(f"{child.role} '{child.name}' {how} and was restarted {child.restarts} times already; "
                               f"giving up. Last lines of {child.log_path}:\n{child.tail()}")
            continue
        child.restarts += 1
        coordinator.notice(f"{child.role} '{child.name}' {how}; restarting it ({child.restarts}/{procs.max_restarts})")
        procs.start(child.name, child.role)
