"""Roles forked from the launcher (ding/parallel/launch/forked_roles.py):
released, discarded, refused with threads running (Python's or native ones).

Each check runs in a fresh interpreter (the way ``ding -m parallel``'s launcher forks: before it starts a thread);
the whole-run behaviour (names, kills, restarts, Ctrl-C) is covered by tests/e2e with roles forked (the default).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import os, sys, threading, time
    from ding.parallel.launch.forked_roles import can_fork, fork_role
    log = sys.argv[1]
    case = sys.argv[2]
    if case == "threads":
        t = threading.Thread(target=time.sleep, args=(1.0,)); t.start()
        print("REASON", can_fork())
        try:
            fork_role(["-m", "serial"], dict(os.environ), log)
        except RuntimeError as e:
            print("REFUSED", e)
        t.join()
        sys.exit(0)
    assert can_fork() is None, can_fork()
    role = fork_role(["-m", "dist", "--module", "learner", "-c", "no_such_config.py"],
                     dict(os.environ, DING_FORK_TEST="1"), log)
    time.sleep(0.3)
    print("WAITING", role.poll())  # blocked on the pipe until released
    if case == "release":
        role.release("127.0.0.1", 9)
    else:
        role.discard()
    print("EXIT", role.wait(timeout=60))
''')


def _run(tmp_path, case: str) -> tuple[str, str]:
    log = tmp_path / "role.log"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(log), case], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout, log.read_text() if log.exists() else ""


def test_released_role_runs_the_dist_command_with_the_address_and_its_output_in_its_log(tmp_path):
    stdout, log = _run(tmp_path, "release")
    assert "WAITING None" in stdout
    assert "EXIT 1" in stdout  # ding -m dist's own exit code for a config error
    assert "no_such_config.py" in log and "ding:" in log  # its stderr went to its log, not the launcher's
    assert "WAITING" not in log  # the launcher's buffered output was not written twice


def test_discarded_role_exits_without_running_anything(tmp_path):
    stdout, log = _run(tmp_path, "discard")
    assert "WAITING None" in stdout and "EXIT 0" in stdout
    assert log == ""


def test_no_fork_while_another_thread_runs(tmp_path):
    stdout, _ = _run(tmp_path, "threads")
    assert "REASON 2 threads run in the launcher already" in stdout
    assert "REFUSED fork_role: cannot fork a role (2 threads" in stdout


NATIVE = textwrap.dedent('''
    import os, sys, threading
    from ding.parallel.launch.forked_roles import can_fork, os_thread_count
    from ding.parallel.launch.local import LocalStarter
    from ding.parallel.launch.supervisor import RoleId
    print("BEFORE", can_fork())
    import torch  # a torch op starts torch's native intra-op pool: Python's own count does not see it
    torch.set_num_threads(2)
    torch.ones(300, 300) @ torch.ones(300, 300)
    print("PYTHON_THREADS", threading.active_count(), "OS_THREADS", os_thread_count())
    print("REASON", can_fork())
    starter = LocalStarter(os.path.join(sys.argv[1], "cfg.py"), "t" * 24)
    starter.prefork([RoleId("collector0", "collector")], os.path.join(sys.argv[1], "exp"))
    print("FORKED", sorted(starter._forked))
    starter.close()
''')


def test_a_native_thread_makes_the_launcher_start_its_roles_by_exec(tmp_path):
    """Issue 36, item 14: can_fork() counted Python threads only, so the launcher forked while torch's native
    intra-op pool ran; it counts the OS's threads (/proc/self/task) and starts the roles by exec instead, saying why."""
    out = subprocess.run([sys.executable, "-c", NATIVE, str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "BEFORE None" in out.stdout, out.stdout  # numpy's BLAS pool alone does not stop a fork
    assert "PYTHON_THREADS 1 " in out.stdout, out.stdout
    assert "native thread(s) run in the launcher already" in out.stdout.split("REASON ", 1)[1], out.stdout
    assert "ding: the roles start by exec, not fork (" in out.stdout and "FORKED []" in out.stdout, out.stdout


PRELOAD = textwrap.dedent('''
    import sys
    from ding.parallel.launch.forked_roles import can_fork, preload_role_modules
    preload_role_modules()
    print("CAN_FORK", can_fork())  # the imports started no thread: the launcher can still fork
    before = set(sys.modules)
    from ding.parallel.transport.base import JsonServer
    from ding.utils.log_helper import build_tb_writer
    from ding.worker.builder import build_acting, build_learning
    server = JsonServer("x", "127.0.0.1", 0, "t" * 24)  # what every role builds before it joins (not started)
    writer = build_tb_writer(sys.argv[1])  # every role's logger
    writer.close()
    heavy = ("flask", "werkzeug", "jinja2", "click", "itsdangerous", "blinker", "tensorboardX", "google.protobuf")
    print("NEW", sorted(m for m in set(sys.modules) - before if m.startswith(heavy)))
''')


def test_preloaded_role_modules_leave_a_forked_role_nothing_heavy_to_import(tmp_path):
    out = subprocess.run([sys.executable, "-c", PRELOAD, str(tmp_path / "tb")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "CAN_FORK None" in out.stdout
    assert "NEW []" in out.stdout, out.stdout
