"""The Slurm launcher (``ding -m dist -P slurm``, ``parallel_pipeline(..., platform='slurm')``): every role of a
parallel run as a Slurm step, placed by Slurm.

The launcher compiles the config (``./<exp_name>/total_config.py``, on a directory every node sees), starts the
coordinator's step, waits for it to write its address (``<exp_name>/coordinator.json``: the node's address, found
where it runs), then starts one step per learner and collector with that address. Inside an allocation
(``sbatch`` / ``salloc``: ``SLURM_JOB_ID`` is set) the roles are job steps of it, each with exactly its CPUs;
outside, each ``srun`` asks for its own allocation. The shared secret travels in the steps' environment, never on a
command line.

It restarts a collector or learner step that ends while the run goes on (``max_restarts`` times, as ``ding -m
parallel`` does with its processes), ends the run when one keeps failing, and on Ctrl-C / SIGTERM asks the
coordinator for its orderly end (``scancel --signal=TERM`` of its step: the learner writes its checkpoint, every role
exits); a second one cancels every step at once. Whatever happens, no step it started is left: on the way out the
launcher cancels (``scancel``) every step or job still listed under its step names, and waits until none is.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from ding.engine.training_view import GracefulStop, TrainingInterrupted
from ding.parallel.launch.driver import ParallelRunError
from ding.parallel.launch.slurm_env import SlurmJob, StepSpec, check_fits, describe, srun_command, step_specs
from ding.utils import ConfigError, atomic_write_text, read_regular_file, shown_dir

ADDRESS_FILE = "coordinator.json"  # written by the coordinator once it listens (ding.entry.dist_entry)
_MAX_ADDRESS_BYTES = 4096


class _Step:
    """One role's ``srun`` process and its log."""

    def __init__(self, spec: StepSpec, step_name: str, log_path: str | None) -> None:
        self.spec, self.step_name, self.log_path = spec, step_name, log_path
        self.proc: subprocess.Popen | None = None
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


class SlurmSteps:
    """The steps of one run: start, watch, signal and cancel them. A context manager: leaving it cancels every step
    still running and sweeps Slurm's queue for any left under this run's step names (also after an error)."""

    def __init__(self, exp_dir: str, job: SlurmJob | None, env: Mapping[str, str], tag: str | None = None,
                 runner: Any = subprocess.run) -> None:
        self.exp_dir, self.job, self.env = exp_dir, job, dict(env)
        self.tag = tag or secrets.token_hex(3)
        self.steps: dict[str, _Step] = {}
        self._run = runner

    def __enter__(self) -> SlurmSteps:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel_all()

    def step_name(self, name: str) -> str:
        return f"ding-{self.tag}-{name}"

    def start(self, spec: StepSpec, command: Sequence[str], log_to_file: bool = True) -> _Step:
        step = self.steps.get(spec.name)
        if step is None:
            log = None
            if log_to_file:
                log_dir = os.path.join(self.exp_dir, "log", spec.name)
                os.makedirs(log_dir, exist_ok=True)
                log = os.path.join(log_dir, "process.log")
            step = self.steps[spec.name] = _Step(spec, self.step_name(spec.name), log)
        cmd = srun_command(spec, step.step_name, self.job, command)
        if step.log_path is None:
            step.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=self.env, start_new_session=True)
        else:
            with open(step.log_path, "ab") as log_file:
                log_file.write(f"ding: {describe(cmd)}\n".encode())
                log_file.flush()
                step.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_file,
                                             stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        return step

    def alive(self) -> list[_Step]:
        return [s for s in self.steps.values() if s.running()]

    def listed(self) -> list[str]:
        """Slurm ids (``job`` or ``job.step``) of this run's steps and jobs that Slurm still lists."""
        names = {s.step_name for s in self.steps.values()}
        if not names:
            return []
        where = ["-j", self.job.job_id] if self.job is not None else ["-u", str(os.getuid())]
        found = []
        for extra in (["-s"], []):  # steps (in an allocation, or a running srun's), then jobs (a pending srun's)
            if extra == [] and self.job is not None:
                continue
            out = self._run(["squeue", "-h", *extra, *where, "-o", "%i %j"], capture_output=True, text=True,
                            timeout=30, env=self.env)
            for line in (out.stdout or "").splitlines():
                parts = line.split(None, 1)
                if len(parts) == 2 and parts[1].strip() in names:
                    found.append(parts[0])
        return found

    def stop_step(self, name: str) -> bool:
        """End step ``name`` now: SIGTERM to its ``srun``, which cancels the step (True if it was running)."""
        step = self.steps.get(name)
        if step is None or not step.running():
            return False
        assert step.proc is not None
        step.proc.terminate()
        return True

    def signal_step(self, name: str, sig: str = "TERM") -> bool:
        """Send ``sig`` to the processes of step ``name`` (not a cancel: the role handles it, e.g. an orderly end)."""
        step = self.steps.get(name)
        if step is None or not step.running():
            return False
        ids = [i for i in self._listed_for(step.step_name)]
        if not ids:
            return False
        self._run(["scancel", f"--signal={sig}", *ids], capture_output=True, text=True, timeout=30, env=self.env)
        return True

    def _listed_for(self, step_name: str) -> list[str]:
        where = ["-j", self.job.job_id] if self.job is not None else ["-u", str(os.getuid())]
        out = self._run(["squeue", "-h", "-s", *where, "-o", "%i %j"], capture_output=True, text=True, timeout=30,
                        env=self.env)
        return [p[0] for p in (line.split(None, 1) for line in (out.stdout or "").splitlines())
                if len(p) == 2 and p[1].strip() == step_name]

    def wait_all(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        return not self.alive()

    def cancel_all(self, grace: float = 0.0) -> None:
        """Wait ``grace`` seconds for the steps to end by themselves; then cancel what is left (srun's SIGTERM
        cancels its step; SIGKILL after 10 s), ``scancel`` whatever Slurm still lists, and wait until it lists
        none (up to 30 s). A Ctrl-C during the grace period cuts it short, not the cancelling."""
        try:
            self.wait_all(grace)
        except KeyboardInterrupt:
            pass
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            left = self.alive()
            if not left:
                break
            for step in left:
                try:
                    assert step.proc is not None
                    step.proc.send_signal(sig)
                except ProcessLookupError:
                    pass
            self.wait_all(wait)
        deadline = time.monotonic() + 30.0
        while True:
            try:
                ids = self.listed()
            except (OSError, subprocess.SubprocessError) as e:
                print(f"ding: could not list this run's Slurm steps to cancel them ({e}); check squeue for names "
                      f"starting with ding-{self.tag}-", file=sys.stderr, flush=True)
                return
            if not ids:
                return
            self._run(["scancel", *ids], capture_output=True, text=True, timeout=30, env=self.env)
            if time.monotonic() > deadline:
                print(f"ding: Slurm still lists steps {' '.join(ids)} of this run after scancel", file=sys.stderr,
                      flush=True)
                return
            time.sleep(0.5)


def _role_command(total_config: str, spec: StepSpec, address: tuple[str, int] | None,
                  max_env_step: int | None, max_train_iter: int | None) -> list[str]:
    cmd = [sys.executable, "-m", "ding", "-m", "dist", "--module", spec.role, "-c", total_config]
    if spec.role == "coordinator":
        for flag, value in (("--env-step", max_env_step), ("--train-iter", max_train_iter)):
            if value is not None and value < int(1e10):
                cmd += [flag, str(int(value))]
        return cmd
    assert address is not None
    return cmd + ["--module-name", spec.name, "--coordinator-host", address[0], "--coordinator-port", str(address[1])]


def _step_env(token: str) -> dict[str, str]:
    from ding.parallel.transport import TOKEN_ENV
    from ding.utils.import_dirs import CONFIG_DIR_ENV, config_dir

    env = dict(os.environ)
    env[TOKEN_ENV] = token
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see docs/benchmarks.md, 'thread trap'
    if config_dir():
        env[CONFIG_DIR_ENV] = str(config_dir())
    return env


def write_address(exp_dir: str, host: str, port: int, token: str) -> str:
    """Write ``<exp_dir>/coordinator.json`` (host, port, node, pid) atomically, once the coordinator listens: where the
    roles join this run (the launcher waits for it; a person can read it). The record is signed with the run's token
    (``mac``), so a file someone else planted there is never taken for this run's."""
    import socket

    path = os.path.join(exp_dir, ADDRESS_FILE)
    record: dict[str, Any] = {"host": host, "port": int(port), "node": socket.gethostname(), "pid": os.getpid()}
    record["mac"] = _address_mac(token, record)
    atomic_write_text(path, json.dumps(record) + "\n")
    return path


def read_address(exp_dir: str, token: str) -> tuple[str, int] | None:
    """The coordinator's ``host, port`` from ``<exp_dir>/coordinator.json``; None while it is not written, or when
    the file there is not signed with ``token`` (not this run's coordinator's: planted, or an earlier run's). Read
    as a regular file only, capped (a FIFO or a link to ``/dev/zero`` is refused without a read)."""
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

    Raises :class:`ParallelRunError` when the run ended with an error (a role kept failing, the coordinator failed),
    :class:`TrainingInterrupted` after Ctrl-C / SIGTERM (the run ended in order first)."""
    from ding.config import compile_config_parallel
    from ding.parallel.transport import TOKEN_ENV, new_token, resolve_token

    if shutil.which("srun", path=os.environ.get("PATH")) is None:
        raise ConfigError("-P slurm: srun is not on PATH; run the launcher on a Slurm login node or inside an "
                          "sbatch/salloc allocation")
    job = SlurmJob.from_env(os.environ)
    given = system.get("auth_token") or os.environ.get(TOKEN_ENV)
    token = resolve_token(given) if given else new_token()
    cfg = compile_config_parallel(main, create, system, seed=seed, platform="slurm", source=source)
    specs = step_specs(cfg.system)
    check_fits(specs, job)
    exp = cfg.main.exp_name
    total = os.path.join(exp, "total_config.py")
    coordinator_spec, role_specs = specs[0], specs[1:]
    start_timeout = float(cfg.system.slurm.start_timeout)
    where = f"job {job.job_id} ({len(job.nodes)} node(s))" if job is not None else "new Slurm jobs"
    print(f"ding: run {shown_dir(exp)} on Slurm: {len(specs)} steps in {where}; step names ding-<tag>-<role>",
          flush=True)
    interrupted = False
    with SlurmSteps(exp, job, _step_env(token)) as steps, GracefulStop() as stop:
        coordinator = steps.start(coordinator_spec, _role_command(total, coordinator_spec, None, max_env_step,
                                                                  max_train_iter), log_to_file=False)
        deadline = time.monotonic() + start_timeout
        address = None
        while address is None:
            address = read_address(exp, token)
            if address is not None:
                break
            if not coordinator.running():
                raise ParallelRunError(f"the coordinator's step ended (srun exit code {_code(coordinator)}) before it "
                                       "listened; its output is above")
            if stop.requested:
                raise TrainingInterrupted(stop.signal_name or "a signal", exp)
            if time.monotonic() > deadline:
                raise ParallelRunError(f"the coordinator's step did not announce its address within "
                                       f"system_config.slurm.start_timeout ({start_timeout:g} s): is it pending "
                                       f"(squeue -n {steps.step_name('coordinator')})? A partition with room, or a "
                                       "larger start_timeout")
            time.sleep(0.2)
        print(f"ding: coordinator listening on {address[0]}:{address[1]}; starting "
              f"{', '.join(s.name for s in role_specs)}", flush=True)
        for spec in role_specs:
            steps.start(spec, _role_command(total, spec, address, None, None))
        failure = None
        try:
            while coordinator.running():
                if stop.requested and not interrupted:
                    interrupted = True
                    steps.signal_step("coordinator", "TERM")  # its orderly end: checkpoint, every role told to exit
                if failure is None and not interrupted:
                    failure = _watch(steps, role_specs, total, address, int(cfg.system.max_restarts))
                    if failure is not None:
                        print(f"ding: {failure}", file=sys.stderr, flush=True)
                        steps.signal_step("coordinator", "TERM")
                time.sleep(0.2)
        except KeyboardInterrupt:  # a second Ctrl-C: cancel every step now
            steps.cancel_all()
            raise
        steps.cancel_all(grace=60.0)  # the roles were told to exit; this only cancels stragglers
    code = _code(coordinator)
    result = _read_result(exp)
    if failure is not None:
        raise ParallelRunError(failure)
    if code not in (0, 130) or (result is not None and result.get("error")):
        raise ParallelRunError((result or {}).get("error") or f"the coordinator's step ended with exit code {code}; "
                               "its output is above")
    if interrupted or code == 130:
        raise TrainingInterrupted(stop.signal_name or "a signal", exp)
    if result is None:
        raise ParallelRunError(f"the coordinator ended without writing {shown_dir(exp)}result")
    return result


def _watch(steps: SlurmSteps, specs: Sequence[StepSpec], total: str, address: tuple[str, int],
           max_restarts: int) -> str | None:
    """Restart a role step that ended while the run goes on; the failure's text once one ran out of restarts."""
    for spec in specs:
        step = steps.steps[spec.name]
        if step.running() or step.proc is None:
            continue
        if step.proc.returncode == 0:  # told to exit by the coordinator (or it lost the coordinator): not a crash
            step.proc = None
            continue
        how = f"ended with srun exit code {_code(step)}"
        group = [s for s in specs if s.role == "learner"]
        if spec.role == "learner" and len(group) > 1:  # a torch.distributed group cannot take a new member
            step.proc = None
            for other in group:  # the rest of the group would wait in a collective until group_timeout: end it now
                if other.name != spec.name and steps.stop_step(other.name):
                    print(f"ding: stopping learner step '{other.name}' (its learner group lost '{spec.name}')",
                          file=sys.stderr, flush=True)
            return (f"learner step '{spec.name}' (one of {len(group)} learners sharing gradients) {how}; a learner "
                    "group is not rebuilt (docs/distributed.md, Several learners). Last lines of "
                    f"{step.log_path}:\n{step.tail()}")
        if step.restarts >= max_restarts:
            others = [s for s in steps.alive() if s.spec.role == spec.role]
            step.proc = None
            if spec.role == "collector" and others:
                print(f"ding: collector step '{spec.name}' {how}; not restarted (max_restarts {max_restarts}); the "
                      "other collectors go on", file=sys.stderr, flush=True)
                continue
            return (f"{spec.role} step '{spec.name}' {how} and was restarted {step.restarts} times already; giving "
                    f"up. Last lines of {step.log_path}:\n{step.tail()}")
        step.restarts += 1
        print(f"ding: {spec.role} step '{spec.name}' {how}; restarting it ({step.restarts}/{max_restarts})",
              file=sys.stderr, flush=True)
        steps.start(spec, _role_command(total, spec, address, None, None))
    return None


def _code(step: _Step) -> int | None:
    return None if step.proc is None else step.proc.poll()


def _read_result(exp: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(exp, "result")) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None

