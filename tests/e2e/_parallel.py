"""Helpers for end-to-end tests of parallel mode: a config file in the test's directory, the processes of a run."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

CONFIG_TEMPLATE = '''
import copy
from easydict import EasyDict
from {base} import (
    main_config as _main, create_config as _create, system_config as _system)


def _update(d, u):
    for k, v in u.items():
        if isinstance(v, dict) and isinstance(d.get(k), dict):
            _update(d[k], v)
        else:
            d[k] = v
    return d


main_config = EasyDict(_update(copy.deepcopy(dict(_main)), {main!r}))
create_config = EasyDict(copy.deepcopy(dict(_create)))
system_config = EasyDict(_update(copy.deepcopy(dict(_system)), {system!r}))
system_config.path_data = './' + main_config.exp_name + '/data'
system_config.path_policy = './' + main_config.exp_name + '/policy'
'''

# Fast failure detection for tests: a killed process is noticed within ~2 s (the roles beat every 0.2 s, and give up
# on a coordinator they cannot reach after 12 s).
FAST_FAULTS = {"coordinator": {"heartbeat_timeout": 2.0}}


CARTPOLE = "dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config"
CONNECT_FOUR_LEAGUE = "dizoo.board_games.connect_four.config.parallel.connect_four_dqn_league_config"


def write_config(directory, exp_name: str, main: dict | None = None, system: dict | None = None,
                 base: str = CARTPOLE) -> str:
    """A config file in ``directory``: the parallel config module ``base`` updated with ``main`` and ``system``."""
    main = dict(main or {})
    main["exp_name"] = exp_name
    path = os.path.join(str(directory), f"{exp_name}_config.py")
    with open(path, "w") as f:
        f.write(CONFIG_TEMPLATE.format(main=main, system=dict(system or {}), base=base))
    return path


def ding_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ding", *args]


def start(args: list[str], cwd, env: dict | None = None, log_name: str = "launcher.log") -> subprocess.Popen:
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONUNBUFFERED"] = "1"
    log = open(os.path.join(str(cwd), log_name), "wb")
    return subprocess.Popen(args, cwd=str(cwd), stdout=log, stderr=subprocess.STDOUT, env=full_env)


def read_log(cwd, log_name: str = "launcher.log") -> str:
    with open(os.path.join(str(cwd), log_name), errors="replace") as f:
        return f.read()


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line, environment or working directory mentions ``text`` (Linux)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().split(") ")[-1].split()[0]
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if state != "Z" and (text in cmd or text in env or cwd.startswith(text)):
            found.append(int(pid))
    return found


def role_pid(cwd, name: str) -> int | None:
    """The role's pid: by its process name (``ding-<name>``; a role forked from the launcher keeps the launcher's
    command line) or by ``--module-name`` in its command line (an exec'd role)."""
    for pid in processes_mentioning(str(cwd)):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm == f"ding-{name}"[:15] or (b"--module-name" in cmd and cmd[cmd.index(b"--module-name") + 1].decode()
                                           == name):
            return pid
    return None


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1, proc=None):
    """Poll ``predicate`` until it is truthy; fail at ``timeout`` or as soon as ``proc`` (the launcher) exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the launcher exited with {proc.returncode} while waiting for {what}")
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def result(cwd, exp_name: str) -> dict:
    with open(os.path.join(str(cwd), exp_name, "result")) as f:
        return json.load(f)


def kill_all(cwd) -> None:
    for pid in processes_mentioning(str(cwd)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def eval_rows(cwd, exp_name: str) -> int:
    """Evaluations the run in ``cwd/exp_name`` has logged so far (rows of its eval.csv)."""
    path = os.path.join(str(cwd), exp_name, "log", "eval.csv")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return max(0, len(f.read().strip().splitlines()) - 1)
