"""Roles started by hand (``ding -m dist --module ...``) with a wrong coordinator address, a wrong token or a port in
use: each process exits within its deadline (short ones here, set in the config) with one clear line naming the
address, where its token came from, or the port. Real processes on 127.0.0.1 and free ports."""
from __future__ import annotations

import os
import re
import socket
import subprocess

import pytest

from ding.parallel.transport import find_free_port

from ._parallel import ding_cmd, read_log, start, wait_for, write_config

pytestmark = pytest.mark.timeout(240)
# Short deadlines: a role gives up on an absent coordinator after 3 s (6 heartbeat_timeouts), a coordinator on absent
# roles after 5 s.
DEADLINES = {"coordinator": {"heartbeat_timeout": 0.5, "startup_timeout": 5.0}}
TOKEN = {"DING_AUTH_TOKEN": "t" * 32}
BOUND = 120  # seconds: a process start (imports, on a loaded machine) plus the deadline


def _run(args, cwd, env=None):
    full = dict(os.environ, PYTHONUNBUFFERED="1", **(env or TOKEN))
    return subprocess.run(ding_cmd(*args), cwd=str(cwd), env=full, capture_output=True, text=True, timeout=BOUND)


def _one_error_line(out) -> str:
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("ding: ")]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.mark.parametrize("role", ["learner", "collector"])
def test_role_with_no_coordinator_at_its_address_names_the_address(workdir, role):
    cfg = write_config(workdir, "noaddr", system=DEADLINES)
    port = find_free_port()  # nothing listens there
    out = _run(["-m", "dist", "--module", role, "-c", cfg, "-cdh", "127.0.0.1", "-cdp", str(port)], workdir)
    line = _one_error_line(out)
    assert f"no coordinator answers at 127.0.0.1:{port}" in line and "connection refused" in line, line
    assert "tried for 3 s, 6 x coordinator.heartbeat_timeout" in line and "--coordinator-host" in line, line


def test_coordinator_bound_to_an_address_this_host_lacks_names_it(workdir):
    cfg = write_config(workdir, "badhost", system=DEADLINES)
    out = _run(["-m", "dist", "--module", "coordinator", "-c", cfg, "-cdh", "192.0.2.1"], workdir)  # TEST-NET-1
    line = _one_error_line(out)
    assert "cannot listen on 192.0.2.1:0" in line and "this host has no address 192.0.2.1" in line, line


@pytest.mark.parametrize("module, flags", [
    ("learner", ["-lh", "127.0.0.1", "-lp"]),
    ("collector", ["-clh", "127.0.0.1", "-clp"]),
    ("coordinator", ["-cdh", "127.0.0.1", "-cdp"]),
])
def test_port_in_use_is_named(workdir, module, flags):
    cfg = write_config(workdir, f"busy{module}", system=DEADLINES)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        args = ["-m", "dist", "--module", module, "-c", cfg, *flags, str(port)]
        if module != "coordinator":
            args += ["-cdh", "127.0.0.1", "-cdp", str(find_free_port())]
        out = _run(args, workdir)
    line = _one_error_line(out)
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in line, line
    assert "choose another port" in line, line


def test_wrong_token_is_named_by_each_role_and_by_the_coordinator(workdir):
    """A coordinator with one token, a learner and a collector with another: both roles exit at once naming where
    their token came from; the coordinator ends at startup_timeout saying that requests had a wrong token."""
    exp = "badtoken"
    # the coordinator waits long enough for the two roles to start (imports: about 3 s on a quiet 2-core machine, up
    # to 4x that on a busy one), then gives up
    cfg = write_config(workdir, exp, system=dict(DEADLINES, coordinator={"startup_timeout": 20.0}))
    coordinator = start(ding_cmd("-m", "dist", "--module", "coordinator", "-c", cfg), workdir, env=TOKEN,
                        log_name="coordinator.log")
    roles = []
    try:
        port = wait_for(lambda: (m := re.search(r"listening on 127\.0\.0\.1:(\d+)", read_log(workdir,
                                                                                        "coordinator.log")))
                        and int(m.group(1)), 90, "the coordinator's port", proc=coordinator)
        wrong = dict(os.environ, PYTHONUNBUFFERED="1", DING_AUTH_TOKEN="w" * 32)
        roles = [subprocess.Popen(ding_cmd("-m", "dist", "--module", role, "-c", cfg, "-cdh", "127.0.0.1", "-cdp",
                                           str(port)), cwd=str(workdir), env=wrong, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for role in ("learner", "collector")]
        for proc in roles:
            stdout, stderr = proc.communicate(timeout=BOUND)
            line = _one_error_line(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
            assert f"the coordinator at 127.0.0.1:{port} refused this role's auth token (HTTP 401)" in line, line
            assert "The token came from the environment variable DING_AUTH_TOKEN" in line, line
        assert coordinator.wait(timeout=BOUND) == 1
    finally:
        for proc in [coordinator, *roles]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = read_log(workdir, "coordinator.log")
    final = [line for line in log.splitlines() if line.startswith("ding: ParallelRunError")]
    assert len(final) == 1 and "no learner came up within startup_timeout (20 s)" in final[0], log
    assert "request(s) reached this coordinator with a missing or wrong auth token: its token came from the " \
           "environment variable DING_AUTH_TOKEN" in final[0], log


def test_token_from_the_config_file_is_named_as_such(workdir):
    cfg = write_config(workdir, "short", system=dict(DEADLINES, auth_token="tooshort"))
    for module in ("coordinator", "learner"):
        out = _run(["-m", "dist", "--module", module, "-c", cfg, "-cdh", "127.0.0.1", "-cdp",
                    str(find_free_port())], workdir)
        line = _one_error_line(out)
        assert "(got 8 characters from system_config.auth_token in" in line and cfg in line, line


@pytest.mark.parametrize("role", ["learner", "collector"])
def test_sigterm_while_joining_ends_the_role_at_once(workdir, role):
    """A role still retrying to join (nothing answers at the coordinator's address: its launcher died, say) stops on
    SIGTERM at once instead of retrying for the rest of 6 heartbeat_timeouts (120 s here)."""
    import signal
    import time

    cfg = write_config(workdir, f"termjoin{role}", system={"coordinator": {"heartbeat_timeout": 20.0}})
    with socket.socket() as listener:  # stands where the coordinator should be: takes a join and cuts it
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(BOUND)
        port = listener.getsockname()[1]
        with open(workdir / f"{role}.log", "w") as out:
            proc = subprocess.Popen(ding_cmd("-m", "dist", "--module", role, "-c", cfg, "-cdh", "127.0.0.1", "-cdp",
                                             str(port)), cwd=str(workdir),
                                    env=dict(os.environ, PYTHONUNBUFFERED="1", **TOKEN), stdout=out,
                                    stderr=subprocess.STDOUT)
        try:
            conn, _ = listener.accept()  # the role is joining
            conn.close()  # a cut connection: the role retries (for up to 6 heartbeat_timeouts)
            time.sleep(0.5)
            assert proc.poll() is None, read_log(workdir, f"{role}.log")
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    text = read_log(workdir, f"{role}.log")
    assert code == 0, text
    assert took < 10, f"{role} took {took:.1f} s to stop after SIGTERM"
