"""Issue 36, item 7: under ``-P slurm`` every role bound 0.0.0.0. Now each binds its node's address on the cluster
network ('auto': the interface that routes to the launch node / the coordinator) and nothing else: the coordinator
in one namespace, a collector in a second, an outsider without the token in a third."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from tests.e2e._parallel import ding_cmd, read_log, wait_for, write_config

pytestmark = [pytest.mark.netns]

TOKEN = "s" * 32

PROBE = """
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    s.sendall(b"POST /api/v1/heartbeat HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2\\r\\n\\r\\n{}")
    print("ANSWER", s.recv(200).split(b"\\r\\n")[0].decode())
except OSError as e:
    print("REFUSED", e)
"""


def _listening(hosts, host: str, port: int) -> list[str]:
    out = subprocess.run(hosts.exec(host) + ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True,
                         timeout=30).stdout
    return [line.split()[3] for line in out.splitlines() if line.split()]


def _probe(hosts, host: str, address: str, port: int) -> str:
    return subprocess.run(hosts.exec(host) + [sys.executable, "-c", PROBE, address, str(port)], capture_output=True,
                          text=True, timeout=60).stdout.strip()


@pytest.mark.timeout(240)
def test_slurm_roles_bind_their_cluster_address_only(hosts, workdir):
    env = dict(os.environ, PYTHONUNBUFFERED="1", DING_AUTH_TOKEN=TOKEN)
    cfg = write_config(workdir, "slurmbind", main={"env": {"stop_value": 1e9}})
    compiled = subprocess.run(ding_cmd("-m", "dist", "--module", "config", "-P", "slurm", "-c", cfg), cwd=workdir,
                              env=env, capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    total = os.path.join("slurmbind", "total_config.py")
    coord_ip, coll_ip = hosts.address["coord"], hosts.address["colla"]
    procs = []
    try:
        with open(workdir / "coordinator.log", "wb") as log:  # the launch node: the coordinator's own
            procs.append(subprocess.Popen(hosts.exec("coord") + ding_cmd("-m", "dist", "--module", "coordinator",
                                                                         "-c", total),
                                          cwd=workdir, env=dict(env, SLURM_LAUNCH_NODE_IPADDR=coord_ip),
                                          stdout=log, stderr=subprocess.STDOUT))
        port = wait_for(lambda: (m := re.search(r"listening on (\S+):(\d+)", read_log(workdir, "coordinator.log")))
                        and int(m.group(2)), 120, "the coordinator's port", proc=procs[0])
        assert _listening(hosts, "coord", port) == [f"{coord_ip}:{port}"]  # not 0.0.0.0, not loopback
        assert _probe(hosts, "coord", "127.0.0.1", port).startswith("REFUSED")
        assert _probe(hosts, "collb", coord_ip, port) == "ANSWER HTTP/1.1 401 UNAUTHORIZED"  # the outsider
        with open(workdir / "collector0.log", "wb") as log:
            procs.append(subprocess.Popen(hosts.exec("colla") + ding_cmd(
                "-m", "dist", "--module", "collector", "--module-name", "collector0", "-c", total,
                "--coordinator-host", coord_ip, "--coordinator-port", str(port)), cwd=workdir, env=env, stdout=log,
                stderr=subprocess.STDOUT))
        coll_port = wait_for(lambda: (m := re.search(rf"'collector0' at {re.escape(coll_ip)}:(\d+)",
                                                     _coordinator_log(workdir))) and int(m.group(1)),
                             120, "collector0 to join", proc=procs[1])
        assert _listening(hosts, "colla", coll_port) == [f"{coll_ip}:{coll_port}"]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 60
        for p in procs:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _coordinator_log(workdir) -> str:
    path = os.path.join(str(workdir), "slurmbind", "log", "coordinator", "coordinator_logger.txt")
    return read_log(os.path.dirname(path), os.path.basename(path)) if os.path.exists(path) else ""
