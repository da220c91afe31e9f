"""Parallel mode across hosts: the coordinator, the learner and two collectors each in a network namespace of its
own (``setup_netns.sh``), reaching each other only over veth links through a bridge, with addresses that exist only
inside the namespaces; the run directory is shared (one filesystem), as an NFS mount would be. Every role is
``ding -m dist --module <role>`` started with ``ip netns exec``. One run reaches CartPole's stop value; in another, one
collector host's link is cut for three heartbeat deadlines and restored: that collector is declared lost, the run goes
on with the other one, the host joins again when its link is back, and every role exits at the end."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest

from tests.e2e._parallel import (
    FAST_FAULTS,
    ding_cmd,
    eval_rows,
    read_log,
    result,
    wait_for,
    write_config,
)

pytestmark = [pytest.mark.netns]

TOKEN = {"DING_AUTH_TOKEN": "n" * 32}
# roles must outlive a cut of 3 heartbeat deadlines plus the wait for an evaluation during it: they give up on the
# coordinator after 6 heartbeat deadlines (42 s)
HEARTBEAT_TIMEOUT = 7.0
SYSTEM = dict(FAST_FAULTS)
SYSTEM["coordinator"] = dict(FAST_FAULTS["coordinator"], heartbeat_timeout=HEARTBEAT_TIMEOUT,
                             startup_timeout=200.0)  # roles importing torch under a heavy load took over the default
# 120 s to join once
ROLES = (("learner", "learner0", "learner"), ("collector", "collector0", "colla"), ("collector", "collector1", "collb"))


def _start(cmd: list[str], cwd, log_name: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **TOKEN)
    log = open(os.path.join(str(cwd), log_name), "wb")
    return subprocess.Popen(cmd, cwd=str(cwd), stdout=log, stderr=subprocess.STDOUT, env=env)


def _start_run(hosts, workdir, exp: str, main: dict) -> list[tuple[str, subprocess.Popen]]:
    """The coordinator on ``coord``, then the learner and the collectors on theirs, each bound to its namespace's
    address (which the root namespace does not have)."""
    cfg = write_config(workdir, exp, main=main, system=SYSTEM)
    coord_ip = hosts.address["coord"]
    coord = _start(hosts.exec("coord") + ding_cmd("-m", "dist", "--module", "coordinator", "-c", cfg,
                                                  "--coordinator-host", coord_ip), workdir, "coordinator.log")
    procs = [("coordinator", coord)]
    try:
        port = wait_for(lambda: (m := re.search(rf"listening on {re.escape(coord_ip)}:(\d+)",
                                                read_log(workdir, "coordinator.log"))) and int(m.group(1)),
                        90, "the coordinator's port", proc=coord)
        total = os.path.join(exp, "total_config.py")
        for role, name, host in ROLES:
            bind = "--learner-host" if role == "learner" else "--collector-host"
            procs.append((name, _start(hosts.exec(host) + ding_cmd(
                "-m", "dist", "--module", role, "--module-name", name, "-c", total, "--coordinator-host", coord_ip,
                "--coordinator-port", str(port), bind, hosts.address[host]), workdir, f"{name}.log")))
    except BaseException:
        _end(procs)
        raise
    return procs


def _end(procs) -> None:
    for _, p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def _all_logs(workdir, procs) -> str:
    return "\n".join(f"--- {name}\n{read_log(workdir, f'{name}.log')[-3000:]}" for name, _ in procs)


def _wait_all(procs, workdir, timeout: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    codes = {}
    for name, p in procs:
        try:
            codes[name] = p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} did not exit within {timeout:g} s\n{_all_logs(workdir, procs)}") from None
    return codes


def _coordinator_log(workdir, exp: str) -> str:
    path = os.path.join(str(workdir), exp, "log", "coordinator", "coordinator_logger.txt")
    return read_log(os.path.dirname(path), os.path.basename(path)) if os.path.exists(path) else ""


@pytest.mark.timeout(240)
def test_run_across_namespaces_reaches_the_stop_value(hosts, workdir):
    exp = "nsconv"
    procs = _start_run(hosts, workdir, exp, main={})
    try:
        codes = _wait_all(procs, workdir, 180)
    finally:
        _end(procs)
    assert codes == {name: 0 for name, _ in procs}, _all_logs(workdir, procs)
    r = result(workdir, exp)
    assert r["stop_flag"] is True and r["best_eval_return"] >= 195 and r["mode"] == "dist", r
    assert r["counters"].get("tasks_collector0", 0) > 0 and r["counters"].get("tasks_collector1", 0) > 0, r
    log = _coordinator_log(workdir, exp)  # every role was reached at its namespace's address, none on loopback
    for _, name, host in ROLES:
        assert f"'{name}' at {hosts.address[host]}:" in log, log[-3000:]
    print(f"across namespaces: stop value after {r['env_step']} env steps, {r['wall_time_s']:.1f} s")


@pytest.mark.timeout(240)
def test_cut_link_loses_the_collector_host_and_it_rejoins_when_the_link_is_back(hosts, workdir):
    exp = "nscut"
    procs = _start_run(hosts, workdir, exp, main={"env": {"stop_value": 1e9}})
    coord = procs[0][1]
    try:
        wait_for(lambda: eval_rows(workdir, exp) >= 1, 120, "the first evaluation", proc=coord)
        joined = _coordinator_log(workdir, exp).count("connected collector 'collector0'")
        hosts.cut("colla")
        t_cut = time.monotonic()
        try:
            wait_for(lambda: "collector 'collector0' lost" in _coordinator_log(workdir, exp), 30,
                     "the coordinator to declare collector0 lost", proc=coord)
            lost_after = time.monotonic() - t_cut
            rows_at_loss = eval_rows(workdir, exp)
            # the run goes on with collector1 while colla stays cut (3 heartbeat deadlines in all)
            time.sleep(max(0.0, 3 * HEARTBEAT_TIMEOUT - (time.monotonic() - t_cut)))
            wait_for(lambda: eval_rows(workdir, exp) > rows_at_loss, 60, "an evaluation while collector0 is cut off",
                     proc=coord)
            assert _coordinator_log(workdir, exp).count("connected collector 'collector0'") == joined
        finally:
            hosts.restore("colla")
        t_back = time.monotonic()
        wait_for(lambda: _coordinator_log(workdir, exp).count("connected collector 'collector0'") > joined, 60,
                 "collector0 to join again after its link came back", proc=coord)
        rejoined_after = time.monotonic() - t_back
        rows = eval_rows(workdir, exp)
        wait_for(lambda: eval_rows(workdir, exp) > rows, 60, "an evaluation after the rejoin", proc=coord)
        coord.send_signal(signal.SIGINT)  # an orderly end across the hosts: every role must exit
        codes = _wait_all(procs, workdir, 90)
    finally:
        _end(procs)
    assert codes["coordinator"] == 130 and all(codes[name] == 0 for _, name, _ in ROLES), \
        (codes, _all_logs(workdir, procs))
    r = result(workdir, exp)
    assert r["interrupted"] is True and r["error"] is None, r
    assert r["counters"].get("lost_collector", 0) >= 1 and r["counters"].get("joins_collector0", 0) >= 2, r
    assert r["counters"].get("tasks_collector1", 0) > 0, r
    print(f"cut link: collector0 declared lost {lost_after:.1f} s after the cut (heartbeat_timeout "
          f"{HEARTBEAT_TIMEOUT:g} s), joined again {rejoined_after:.1f} s after the link came back")
