"""The learner group's rendezvous seen from another host (issue 36, item 1): learner0 in one network namespace, an
outsider without the run's token in another, the run directory shared. The store listens only where learner0 was
told to listen, and a process that reaches it but cannot prove the token never gets the start task or a batch: the
group ends with one error naming the rank."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = [pytest.mark.netns]

TOKEN = "r" * 32
SECRET = "MAIN-CONFIG-OF-THE-RUN"

LEADER = textwrap.dedent(f"""
    import sys
    from ding.parallel.roles.learner_group import LearnerGroup, LearnerGroupError
    from ding.parallel.roles.learner_group.group import KIND_DATA
    path, bind, advertise, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    try:
        group = LearnerGroup.host(path, bind, advertise, 2, "gloo", timeout, "learner0", {TOKEN!r})
        group.send(KIND_DATA, b"{SECRET}")
        print("SENT", flush=True)
        group.close(path)
    except LearnerGroupError as e:
        print("REFUSED", e, flush=True)
""")

# An outsider that speaks torch.distributed but holds no token: it joins the store as rank 1 and waits for
# learner0's first broadcast, as a member would (the start task: header, then payload).
NAIVE = textwrap.dedent("""
    import json, sys
    from datetime import timedelta
    import torch, torch.distributed as dist
    where = json.load(open(sys.argv[1]))
    store = dist.TCPStore(where["host"], where["port"], 2, False, timedelta(seconds=40))
    store.set("outsider", "was here")
    print("STORE-WRITTEN", flush=True)
    dist.init_process_group("gloo", store=store, rank=1, world_size=2, timeout=timedelta(seconds=40))
    print("JOINED", flush=True)
    header = torch.zeros(2, dtype=torch.int64)
    dist.broadcast(header, src=0)
    payload = torch.zeros(int(header[1]), dtype=torch.uint8)
    dist.broadcast(payload, src=0)
    print("GOT", bytes(payload.numpy().tobytes()), flush=True)
""")

PROBE = textwrap.dedent("""
    import socket, sys
    try:
        socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
        print("CONNECTED")
    except OSError as e:
        print("REFUSED", e)
""")

# An outsider that runs ding's own member code with a guessed token.
GUESS = textwrap.dedent("""
    import sys
    from ding.parallel.roles.learner_group import LearnerGroup, LearnerGroupError
    try:
        group = LearnerGroup.join(sys.argv[1], 1, 2, 40.0, "outsider", "g" * 32)
        print("GOT", group.receive(), flush=True)
    except LearnerGroupError as e:
        print("REFUSED", e, flush=True)
""")


def _python(hosts, host: str, code: str, *args: str, cwd) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.getcwd())
    return subprocess.Popen(hosts.exec(host) + [sys.executable, "-c", code, *args], cwd=str(cwd), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_file(path: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.1)


def _finish(proc: subprocess.Popen, timeout: float = 120.0) -> str:
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0] + "\n<killed: timed out>"


@pytest.mark.timeout(180)
def test_a_loopback_group_listens_on_loopback_only(hosts, tmp_path):
    """learner0 told to listen on 127.0.0.1: nothing listens on another interface (torch's TCPStore alone binds
    every interface), so the outsider's connection to the host's address is refused."""
    path = str(tmp_path / "learner_group.json")
    leader = _python(hosts, "learner", LEADER, path, "127.0.0.1", "127.0.0.1", "8", cwd=tmp_path)
    try:
        _wait_file(path, leader)
        import json

        port = json.load(open(path))["port"]
        listening = subprocess.run(hosts.exec("learner") + ["ss", "-Hltn", f"sport = :{port}"], capture_output=True,
                                   text=True, timeout=30).stdout
        assert listening.split() and all(line.split()[3] == f"127.0.0.1:{port}" for line in listening.splitlines()), \
            listening
        out = _finish(_python(hosts, "colla", PROBE, hosts.address["learner"], str(port), cwd=tmp_path))
        assert out.startswith("REFUSED"), out
    finally:
        out = _finish(leader)
    assert "REFUSED" in out and "did not form" in out, out  # nobody joined: the group times out, one error


@pytest.mark.timeout(180)
@pytest.mark.parametrize("outsider", ["naive", "guess"])
def test_an_outsider_reaching_the_store_never_gets_the_start_task(hosts, tmp_path, outsider):
    path = str(tmp_path / "learner_group.json")
    address = hosts.address["learner"]
    leader = _python(hosts, "learner", LEADER, path, address, address, "40", cwd=tmp_path)  # (slack for a loaded host)
    try:
        _wait_file(path, leader)
        out = _finish(_python(hosts, "colla", NAIVE if outsider == "naive" else GUESS, path, cwd=tmp_path))
    finally:
        lead = _finish(leader)
    assert SECRET not in out and "SENT" not in lead, f"outsider:\n{out}\nlearner0:\n{lead}"
    assert "\nREFUSED learner0" in "\n" + lead, lead
    if outsider == "guess":  # it spoke the protocol: refused by its proof, on both sides, by name
        assert "rank(s) 1 of the learner group did not prove the run's auth token" in lead, lead
        assert "rank(s) 0 of the learner group did not prove" in out, out

