"""The local launcher (``ding -m parallel``, ``parallel_pipeline``): the coordinator in this process, the other roles
as children in their own sessions (a terminal's Ctrl-C reaches only the launcher), dying with it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from ding.config import compile_config_parallel, rename_experiment
from ding.engine.resume import lock_run_dir, resume_dir
from ding.parallel.launch.driver import check_resumable, drive_coordinator, read_state
from ding.parallel.launch.forked_roles import ForkedRole, can_fork, fork_role, preload_role_modules
from ding.parallel.launch.supervisor import RoleId, RoleSupervisor, popen_logged, role_env, role_log, roles_of
from ding.parallel.mechanisms import is_on, turned_off
from ding.parallel.transport import TOKEN_ENV, new_token
from ding.utils import ConfigError, DirLock, ResumeError


class LocalStarter:
    """How ``ding -m parallel`` starts a role: forked by :meth:`prefork` and released once the coordinator listens,
    else exec'd (restarts always are: by then this process has threads)."""

    what = ""
    clean_exit_ends = False  # the coordinator is in this process: the supervisor is told when the run ends
    end_now: int = signal.SIGKILL  # a learner blocked in a collective runs no SIGTERM handler

    def __init__(self, config_path: str, token: str) -> None:
        self._config_path, self._token = config_path, token
        self.address = ("", 0)  # the coordinator's: set once it listens
        self._forked: dict[str, ForkedRole] = {}  # forked before the coordinator listened, not released yet

    def _env(self) -> dict[str, str]:
        return role_env(self._token, launcher_pid=os.getpid())

    def _argv(self, role: RoleId) -> list[str]:
        return ["-m", "dist", "--module", role.role, "--module-name", role.name, "-c", self._config_path]

    def prefork(self, roles: list[RoleId], exp_dir: str) -> None:
        """Fork the first roles now, while this process has no thread; where it has one (a fork would copy its locks
        half-held) they are exec'd at :meth:`start`, and one line says why."""
        reason = can_fork()
        if reason is not None:
            print(f"ding: the roles start by exec, not fork ({reason})", flush=True)
            return
        preload_role_modules()
        for role in roles:
            self._forked[role.name] = fork_role(self._argv(role), self._env(), role_log(exp_dir, role.name))

    def start(self, role: RoleId, log_path: str | None) -> ForkedRole | subprocess.Popen:
        forked = self._forked.pop(role.name, None)
        if forked is not None and forked.poll() is None:
            forked.release(*self.address)
            return forked
        return popen_logged([sys.executable, "-m", "ding", *self._argv(role), "--coordinator-host", self.address[0],
                             "--coordinator-port", str(self.address[1])], self._env(), log_path)

    def close(self) -> None:
        """Tell the forked children never released to exit, and reap them."""
        for forked in self._forked.values():
            forked.discard()
            try:
                forked.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                forked.send_signal(signal.SIGKILL)
                forked.wait(timeout=5.0)
        self._forked.clear()


def launch_parallel(main: dict, create: dict, system: dict, *, seed: int = 0, source: str | None = None,
                    max_env_step: int | None = None, max_train_iter: int | None = None, resume: bool = False,
                    extend: bool = False, platform: str = "local") -> dict[str, Any]:
    """Compile the run's config and run it as local processes (``resume``: the stopped run in ``./<exp_name>/``) or
    Slurm steps; return the run's result. The caller checks ``extend`` and the limits before the config is read."""
    if platform not in ("local", "slurm"):
        raise ConfigError(f"parallel_pipeline: platform must be 'local' or 'slurm', got {platform!r}")
    turned_off()  # an unknown name in DING_PARALLEL_OFF fails here, before anything is written or started
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
    # resume: the run's directory is checked and locked before anything is written
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
    roles = roles_of(cfg.system)
    starter = LocalStarter(os.path.join(exp, "total_config.py"), token)
    with RoleSupervisor(starter, exp, cfg.system.max_restarts) as procs:
        if _start_method(cfg) == "fork":  # before the coordinator starts its threads (docs/parallel.md)
            starter.prefork(roles, exp)

        def start_roles(coordinator: Any) -> None:
            starter.address = (coordinator.host, int(coordinator.port))
            procs.report_to(coordinator.notice, coordinator.fail, lambda: coordinator.end_reason is not None)
            for role in roles:
                procs.start(role)

        return drive_coordinator(
            cfg, mode="parallel", on_listen=start_roles, supervisor=procs, token=token, max_env_step=max_env_step,
            max_train_iter=max_train_iter, resume_state=resume_state, extend=extend)


def _start_method(cfg: Any) -> str:
    """'fork' where the OS has it (the roles skip their imports), else 'exec'. A config that asks for CUDA is always
    exec'd: CUDA does not survive a fork (``DING_PARALLEL_OFF=role_fork`` turns forking off: mechanisms.py)."""
    if cfg.main.policy.get("cuda") or not hasattr(os, "fork") or not is_on("role_fork"):
        return "exec"
    return "fork"
