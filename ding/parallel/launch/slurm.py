"""The Slurm launcher (``-P slurm``): the coordinator's step starts first and writes its address
(``<exp_name>/coordinator.json``), then one step per learner and collector joins it (docs/distributed.md)."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from ding.engine.training_view import GracefulStop, TrainingInterrupted
from ding.parallel.launch.driver import NO_LIMIT, ParallelRunError
from ding.parallel.launch.slurm_env import SlurmJob, StepSpec, check_fits, srun_command, step_specs
from ding.parallel.launch.supervisor import RoleId, RoleSupervisor, popen_logged, role_env, stderr_line
from ding.utils import ConfigError, atomic_write_text, read_regular_file, shown_dir

ADDRESS_FILE = "coordinator.json"  # written by the coordinator once it listens
_MAX_ADDRESS_BYTES = 4096


class SlurmStarter:
    """How ``-P slurm`` starts a role: an ``srun`` of ``ding -m dist --module <role>`` as step ``ding-<tag>-<name>``."""

    what = " step"
    clean_exit_ends = True  # the coordinator runs elsewhere: a step ending with 0 was told to, or lost it
    end_now: int = signal.SIGTERM  # srun cancels its step on SIGTERM; a SIGKILL of srun would leave the step running

    def __init__(self, job: SlurmJob | None, env: Mapping[str, str], total_config: str,
                 limits: tuple[int | None, int | None] = (None, None), runner: Any = subprocess.run) -> None:
        self.job, self.env, self.total_config, self.limits = job, dict(env), total_config, limits
        self.tag = secrets.token_hex(3)
        self.address: tuple[str, int] | None = None  # the coordinator's: set once it announced it
        self._names: set[str] = set()
        self._run = runner

    def step_name(self, name: str) -> str:
        return f"ding-{self.tag}-{name}"

    def start(self, role: RoleId, log_path: str | None) -> subprocess.Popen:
        assert isinstance(role, StepSpec)
        self._names.add(self.step_name(role.name))
        cmd = [sys.executable, "-m", "ding", "-m", "dist", "--module", role.role, "-c", self.total_config]
        if role.role == "coordinator":
            for flag, value in zip(("--env-step", "--train-iter"), self.limits):
                if value is not None and value < NO_LIMIT:
                    cmd += [flag, str(int(value))]
        else:
            assert self.address is not None
            cmd += ["--module-name", role.name, "--coordinator-host", self.address[0], "--coordinator-port",
                    str(self.address[1])]
        cmd = srun_command(role, self.step_name(role.name), self.job, cmd)
        return popen_logged(cmd, self.env, log_path, header=f"ding: {shlex.join(cmd)}\n")

    def listed(self, names: set[str] | None = None) -> list[str]:
        """Slurm ids of this run's steps (outside an allocation also a pending srun's job), or of steps ``names``."""
        found = self._squeue(["-s"], names or self._names)
        return found + self._squeue([], self._names) if names is None and self.job is None else found

    def _squeue(self, extra: list[str], names: set[str]) -> list[str]:
        if not names:
            return []
        where = ["-j", self.job.job_id] if self.job is not None else ["-u", str(os.getuid())]
        out = self._run(["squeue", "-h", *extra, *where, "-o", "%i %j"], capture_output=True, text=True, timeout=30,
                        env=self.env)
        return [p[0] for p in (line.split(None, 1) for line in (out.stdout or "").splitlines())
                if len(p) == 2 and p[1].strip() in names]

    def end_coordinator(self) -> None:
        """SIGTERM the coordinator step's processes (not a cancel: it ends the run in order)."""
        ids = self.listed({self.step_name("coordinator")})
        if ids:
            self._run(["scancel", "--signal=TERM", *ids], capture_output=True, text=True, timeout=30, env=self.env)

    def close(self) -> None:
        """``scancel`` whatever Slurm still lists of this run, until it lists none (up to 30 s)."""
        deadline = time.monotonic() + 30.0
        while True:
            try:
                ids = self.listed()
            except (OSError, subprocess.SubprocessError) as e:
                stderr_line(f"could not list this run's Slurm steps to cancel them ({e}); check squeue for names "
                            f"starting with ding-{self.tag}-")
                return
            if not ids:
                return
            self._run(["scancel", *ids], capture_output=True, text=True, timeout=30, env=self.env)
            if time.monotonic() > deadline:
                stderr_line(f"Slurm still lists steps {' '.join(ids)} of this run after scancel")
                return
            time.sleep(0.5)


def write_address(exp_dir: str, host: str, port: int, token: str) -> None:
    """Write ``<exp_dir>/coordinator.json`` (host, port, node, pid) atomically, signed with the run's token (``mac``)
    so that a file planted there is never taken."""
    record: dict[str, Any] = {"host": host, "port": int(port), "node": socket.gethostname(), "pid": os.getpid()}
    record["mac"] = _address_mac(token, record)
    atomic_write_text(os.path.join(exp_dir, ADDRESS_FILE), json.dumps(record) + "\n")


def read_address(exp_dir: str, token: str) -> tuple[str, int] | None:
    """The coordinator's ``host, port`` from ``<exp_dir>/coordinator.json``; None while it is not written or not
    signed with ``token``. Read as a capped regular file only (a FIFO or ``/dev/zero`` link is refused unread)."""
    try:
        data = json.loads(read_regular_file(os.path.join(exp_dir, ADDRESS_FILE), _MAX_ADDRESS_BYTES,
                                            "the coordinator's address file"))
        mac = data.pop("mac")
        if not isinstance(mac, str) or not hmac.compare_digest(mac, _address_mac(token, data)):
            return None
        return str(data["host"]), int(data["port"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # (DataFileError is a ValueError)
        return None


def _address_mac(token: str, record: dict[str, Any]) -> str:
    fields = json.dumps([record.get("host"), record.get("port"), record.get("node"), record.get("pid")])
    return hmac.new(token.encode(), b"ding coordinator address v1|" + fields.encode(), hashlib.sha256).hexdigest()


def run_slurm(main: Any, create: Any, system: Any, *, seed: int = 0, source: str | None = None,
              max_env_step: int | None = None, max_train_iter: int | None = None) -> dict[str, Any]:
    """Run a parallel config's roles as Slurm steps until the coordinator ends the run; return its ``result``.
    Raises :class:`ParallelRunError` on an error, :class:`TrainingInterrupted` after Ctrl-C / SIGTERM."""
    from ding.config import compile_config_parallel
    from ding.parallel.transport import TOKEN_ENV, new_token, resolve_token

    if shutil.which("srun", path=os.environ.get("PATH")) is None:
        raise ConfigError("-P slurm: srun is not on PATH; run the launcher on a Slurm login node or inside an "
                          "sbatch/salloc allocation")
    job = SlurmJob.from_env(os.environ)  # inside sbatch / salloc the roles are job steps of it, else jobs of their own
    given = system.get("auth_token") or os.environ.get(TOKEN_ENV)
    token = resolve_token(given) if given else new_token()
    cfg = compile_config_parallel(main, create, system, seed=seed, platform="slurm", source=source)
    specs = step_specs(cfg.system)
    check_fits(specs, job)
    exp = cfg.main.exp_name
    start_timeout = float(cfg.system.slurm.start_timeout)
    where = f"job {job.job_id} ({len(job.nodes)} node(s))" if job is not None else "new Slurm jobs"
    print(f"ding: run {shown_dir(exp)} on Slurm: {len(specs)} steps in {where}; step names ding-<tag>-<role>",
          flush=True)
    starter = SlurmStarter(job, role_env(token), os.path.join(exp, "total_config.py"), (max_env_step, max_train_iter))
    with RoleSupervisor(starter, exp, int(cfg.system.max_restarts)) as steps, GracefulStop() as stop:
        coordinator = steps.start(specs[0], log=False)
        coordinator_step = coordinator.proc  # (never restarted: tick() leaves the coordinator alone)
        assert coordinator_step is not None
        deadline = time.monotonic() + start_timeout
        while (address := read_address(exp, token)) is None:
            if (code := coordinator_step.poll()) is not None:
                raise ParallelRunError(f"the coordinator's step ended (srun exit code {code}) before it listened; its "
                                       "output is above")
            if stop.requested:
                raise TrainingInterrupted(stop.signal_name or "a signal", exp)
            if time.monotonic() > deadline:
                raise ParallelRunError(f"the coordinator's step did not announce its address within "
                                       f"system_config.slurm.start_timeout ({start_timeout:g} s): is it pending "
                                       f"(squeue -n {starter.step_name('coordinator')})? A partition with room, or a "
                                       "larger start_timeout")
            time.sleep(0.2)
        print(f"ding: coordinator listening on {address[0]}:{address[1]}; starting "
              f"{', '.join(s.name for s in specs[1:])}", flush=True)
        starter.address = address

        def fail(message: str) -> None:
            stderr_line(message)
            starter.end_coordinator()

        steps.report_to(stderr_line, fail, lambda: stop.requested)
        for spec in specs[1:]:
            steps.start(spec)
        interrupted = False
        try:
            while coordinator.running():
                if stop.requested and not interrupted:  # Ctrl-C / SIGTERM: the coordinator's orderly end
                    interrupted = True
                    starter.end_coordinator()
                steps.tick()
                time.sleep(0.2)
        except KeyboardInterrupt:  # a second Ctrl-C: cancel every step now
            steps.stop(grace=0.0)
            raise
        steps.stop(grace=60.0)  # the roles were told to exit; this only cancels stragglers
    code = coordinator_step.poll()
    result = _read_result(exp)
    if steps.failure is not None:
        raise ParallelRunError(steps.failure)
    if code not in (0, 130) or (result is not None and result.get("error")):
        raise ParallelRunError((result or {}).get("error") or f"the coordinator's step ended with exit code {code}; "
                               "its output is above")
    if interrupted or code == 130:
        raise TrainingInterrupted(stop.signal_name or "a signal", exp)
    if result is None:
        raise ParallelRunError(f"the coordinator ended without writing {shown_dir(exp)}result")
    return result


def _read_result(exp: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(exp, "result")) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None
