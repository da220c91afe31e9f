"""What one ``ding -m dist --module coordinator|learner|collector`` process runs, started by hand, by a cluster launcher
or by ``ding -m parallel``."""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from easydict import EasyDict

from ding.engine.stop_signals import StoppedBySignal, StopSignals
from ding.parallel.launch.slurm import ADDRESS_FILE, read_address
from ding.parallel.launch.supervisor import PARENT_PID_ENV, roles_of
from ding.utils.process_helper import set_process_name

_NOT_AN_ADDRESS = (None, "", "auto", "0.0.0.0")  # values a role cannot join: found only where the coordinator runs
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """If ``DING_PARENT_PID`` names our launcher, get SIGTERM when it dies (Linux), and exit if it is gone already."""
    parent = os.environ.get(PARENT_PID_ENV)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != int(parent):
        raise SystemExit(f"ding: the launcher (pid {parent}) is gone; exiting")


def role_config(system: Mapping | None, role: str, name: str, *, coordinator_host: str | None = None,
                coordinator_port: int | None = None, host: str | None = None, port: int | None = None) -> EasyDict:
    """The comm learner/collector config of ``name``: its ``system_config`` entry, flags override."""
    system = EasyDict(system or {})
    comm = system.get(f"comm_{role}") or {}
    coordinator = system.get("coordinator") or {}
    cfg = EasyDict(type=comm.get("type", "flask_fs"), import_names=list(comm.get("import_names", [])),
                   host="127.0.0.1", port=0)
    cfg.update({k: system[k] for k in ("auth_token", "path_data", "path_policy") if system.get(k) is not None})
    if coordinator.get("heartbeat_timeout") is not None:  # the role's heartbeats and patience follow it
        cfg.heartbeat_timeout = coordinator["heartbeat_timeout"]
    cfg.update(system.get(name) or {})  # path_data / path_policy: tasks must name these (parallel_files.run_dir)
    known = [h for h in (coordinator.get("advertise_host"), coordinator.get("host")) if h not in _NOT_AN_ADDRESS]
    cfg.coordinator_host = coordinator_host or (known[0] if known else None)
    cfg.coordinator_port = coordinator_port if coordinator_port is not None else coordinator.get("port")
    cfg.host = cfg.host if host is None else host
    port = cfg.port if port is None else port
    cfg.port = 0 if port in ("auto", None) else port
    return cfg


def join_run(role: str, name: str, main: Mapping, system: Mapping, config_path: str, **where: Any) -> int:
    """``ding -m dist --module learner|collector``: run ``name`` (``where``: the host/port flags) until the run ends,
    the coordinator is unreachable for six heartbeat timeouts, a signal arrives or the launcher dies. Without the
    coordinator's port it waits up to 120 s for the signed address file the coordinator writes once it listens."""
    from ding.parallel.transport import resolve_token, token_source

    cfg = role_config(system, role, name, **where)
    token_where = f"system_config.auth_token in {config_path}"
    token = resolve_token(system.get("auth_token"), where=token_where)
    if not cfg.get("coordinator_port") and isinstance(main.get("exp_name"), str):
        exp, deadline = str(main["exp_name"]), time.monotonic() + 120.0
        if (found := read_address(exp, token)) is None:
            print(f"ding: {name}: waiting for the coordinator's address in {os.path.join(exp, ADDRESS_FILE)}",
                  flush=True)
        while found is None and time.monotonic() < deadline:
            time.sleep(0.2)
            found = read_address(exp, token)
        if found is not None:
            cfg.coordinator_host = cfg.get("coordinator_host") or found[0]
            cfg.coordinator_port = found[1]
    from ding.parallel.roles.collector import create_comm_collector
    from ding.parallel.roles.learner import create_comm_learner
    from ding.parallel.transport import RequestRejected, resolve_advertise_host
    from ding.utils import ConfigError, setup_torch_threads

    set_process_name(f"ding-{name}")
    die_with_parent()
    setup_torch_threads()
    group = role == "learner" and int(cfg.get("learner_num", 1)) > 1  # one of several learners sharing gradients
    if group and int(cfg.get("learner_rank", 0)) > 0:  # learner1..: follows learner0, never talks to the coordinator
        from ding.parallel.roles.learner_group import run_group_member

        return run_group_member(EasyDict(dict(cfg)), name)
    if not cfg.get("coordinator_host") or not cfg.get("coordinator_port"):
        raise ConfigError(f"{name}: where is the coordinator? Pass --coordinator-host and --coordinator-port (or set "
                          "system_config.coordinator.host/port in the config given with -c)")
    role_cfg = EasyDict(dict(cfg))
    for key in ("advertise_host", "host"):  # 'auto': the address of the interface that routes to the coordinator
        role_cfg[key] = resolve_advertise_host(cfg.get(key), towards=str(cfg["coordinator_host"]))
    if group:
        from ding.parallel.roles.learner_group import LearnerAggregator

        comm: Any = LearnerAggregator(role_cfg, name=name)  # learner0: the coordinator's one learner
    else:
        comm = (create_comm_learner if role == "learner" else create_comm_collector)(role_cfg, name=name)
    joined = threading.Event()  # read lock-free (is_set) by the signal handler
    with StopSignals(interrupt=lambda: not joined.is_set()) as stop:  # still joining: stop its retries now
        try:
            comm.start()
            joined.set()
            while not comm.wait(0.2) and not stop.requested:
                pass
        except StoppedBySignal as e:  # (raised only while joining)
            logging.getLogger(f"ding.{name}").info("%s: stopped by signal %d while joining the coordinator", name,
                                                   e.signum)
        except RequestRejected as e:
            if e.code != 401:
                raise
            raise ConfigError(
                f"{name}: the coordinator at {cfg['coordinator_host']}:{cfg['coordinator_port']} refused this role's "
                f"auth token (HTTP 401). The token came from {token_source(system.get('auth_token'), token_where)}; "
                "give every role and the coordinator the same token (system_config.auth_token, or DING_AUTH_TOKEN in "
                "each one's environment)") from None
        finally:
            comm.close()
    return 0


def run_coordinator(cfg: Any, max_env_step: int | None, max_train_iter: int | None, token_source: str) -> int:
    """Run a coordinator alone: learners and collectors join it (or it connects the configured ones). Its address
    goes to ``<exp_dir>/coordinator.json`` once it listens."""
    from ding.parallel.launch.driver import drive_coordinator
    from ding.parallel.launch.slurm import write_address
    from ding.parallel.transport import resolve_token
    from ding.utils import setup_torch_threads

    setup_torch_threads()
    set_process_name("ding-coordinator")

    def announce(coordinator: Any) -> None:
        write_address(cfg.main.exp_name, coordinator.host, coordinator.port,
                      resolve_token(cfg.system.get("auth_token")))  # the coordinator's own token (signs the file)
        print(f"ding: coordinator of run ./{cfg.main.exp_name}/ listening on {coordinator.host}:{coordinator.port}; "
              f"start learners and collectors with --coordinator-host {coordinator.host} --coordinator-port "
              f"{coordinator.port}", flush=True)

    drive_coordinator(cfg, mode="dist", on_listen=announce, max_env_step=max_env_step, max_train_iter=max_train_iter,
                      token_source=token_source)
    return 0


def print_role_commands(cfg: Any) -> None:
    """``ding -m dist --module config``: how to start each role of the compiled run ``cfg``."""
    path = os.path.join(cfg.main.exp_name, "total_config.py")
    lines = [f"  ding -m dist --module coordinator -c {path}"] + [
        f"  ding -m dist --module {r.role} --module-name {r.name} -c {path}" for r in roles_of(cfg.system)]
    print(f"ding: wrote {path}; start the roles, in any order, with\n" + "\n".join(lines) +
          f"\n(without --coordinator-host/--coordinator-port the roles wait for the coordinator's address in "
          f"{os.path.join(cfg.main.exp_name, ADDRESS_FILE)}, which it writes once it listens; a role given an "
          f"address needs the coordinator started first)")
