"""``ding -m parallel`` end to end: real processes on loopback, real files, faults injected by killing processes."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from ._parallel import (
    FAST_FAULTS,
    ding_cmd,
    eval_rows,
    processes_mentioning,
    read_log,
    result,
    role_pid,
    start,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.timeout(240)






@pytest.mark.convergence
def test_cartpole_reaches_the_stop_value_and_leaves_nothing_behind(workdir):
    exp = "conv"
    cfg = write_config(workdir, exp, main={"policy": {"other": {"replay_buffer": {"replay_buffer_size": 500}}}})
    t0 = time.monotonic()
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "-s", "0"), workdir)
    code = proc.wait(timeout=200)
    log = read_log(workdir)
    assert code == 0, log
    r = result(workdir, exp)
    assert r["stop_flag"] is True and r["best_eval_return"] >= 195, r
    assert "reached the stop value" in log
    assert not processes_mentioning(str(workdir)), "a role process outlived the launcher"
    data = os.listdir(os.path.join(str(workdir), exp, "data"))
    assert len(data) <= 500, f"{len(data)} data files left, more than the buffer holds"
    ckpts = os.listdir(os.path.join(str(workdir), exp, "ckpt"))  # the learner's alone: no collector writes here
    assert ckpts and all(c.startswith("iteration_") for c in ckpts), ckpts
    assert os.listdir(os.path.join(str(workdir), exp, "collector_ckpt")) == ["ckpt_best.pth.tar"]
    for role in ("learner0", "collector0", "collector1", "coordinator"):
        assert os.path.isdir(os.path.join(str(workdir), exp, "log", role)), role
    print(f"parallel CartPole DQN: {time.monotonic() - t0:.1f} s, {r['env_step']} env steps")


def test_budget_run_ends_cleanly_with_processes_named_by_role(workdir):
    exp = "budget"
    cfg = write_config(workdir, exp)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--env-step", "400"), workdir)
    names = wait_for(lambda: _role_names(workdir) if len(_role_names(workdir)) == 3 else None, 60,
                     "the three role processes", proc=proc)
    assert names == {"ding-learner0", "ding-collector0", "ding-collector1"}
    assert proc.wait(timeout=120) == 0, read_log(workdir)
    r = result(workdir, exp)
    assert r["env_step"] >= 400 and "max_env_step" in r["end_reason"]
    assert 0 < r["train_time_s"] < r["wall_time_s"]  # training time leaves out the roles' start-up
    assert not processes_mentioning(str(workdir))


def _role_names(workdir) -> set[str]:
    names = set()
    for pid in processes_mentioning(str(workdir)):
        try:
            with open(f"/proc/{pid}/comm") as f:
                names.add(f.read().strip())
        except OSError:
            pass
    return {n for n in names if n.startswith("ding-")}


def test_killed_collector_is_detected_and_training_finishes(workdir):
    exp = "killc"
    cfg = write_config(workdir, exp, system=dict(FAST_FAULTS, max_restarts=0))
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--env-step", "2500"), workdir)
    wait_for(lambda: eval_rows(workdir, exp) >= 1, 90, "the first evaluation", proc=proc)
    pid = wait_for(lambda: role_pid(workdir, "collector0"), 10, "collector0's pid")
    os.kill(pid, signal.SIGKILL)
    assert proc.wait(timeout=150) == 0, read_log(workdir)
    r = result(workdir, exp)
    assert r["env_step"] >= 2500 or r["stop_flag"], r
    assert r["counters"].get("lost_collector", 0) >= 1, r
    log = read_log(workdir)
    assert "collector 'collector0'" in log and "not restarted" in log
    coordinator_log = open(os.path.join(str(workdir), exp, "log", "coordinator", "coordinator_logger.txt")).read()
    assert "collector0' lost" in coordinator_log
    assert not processes_mentioning(str(workdir))


def test_collector_started_mid_run_receives_tasks(workdir):
    # The run must outlast the joiner's start-up (a python + torch import, seconds on a loaded machine): no stop value
    # and a large budget; it is ended by Ctrl-C once the joiner has been connected for two more evaluations.
    exp = "joiner"
    token = "j" * 32
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9},
                                           "policy": {"collect": {"collector": {"collector_num": 1}}}},
                       system=FAST_FAULTS)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--env-step", "10000000"), workdir,
                 env={"DING_AUTH_TOKEN": token})
    coord_log = os.path.join(str(workdir), exp, "log", "coordinator", "coordinator_logger.txt")
    port = wait_for(lambda: _coordinator_port(coord_log), 60, "the coordinator's port", proc=proc)
    wait_for(lambda: eval_rows(workdir, exp) >= 1, 90, "the first evaluation", proc=proc)
    joiner = start(ding_cmd("-m", "dist", "--module", "collector", "--module-name", "collector7", "-c",
                            os.path.join(exp, "total_config.py"), "--coordinator-host", "127.0.0.1",
                            "--coordinator-port", str(port)), workdir, env={"DING_AUTH_TOKEN": token},
                   log_name="joiner.log")
    # joined, then started (its start task done: from then on it gets collect tasks)
    wait_for(lambda: "collector 'collector7' started" in open(coord_log).read(), 90, "collector7 to start",
             proc=proc)
    rows = eval_rows(workdir, exp)
    wait_for(lambda: eval_rows(workdir, exp) >= rows + 2, 90, "two evaluations after the join", proc=proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=90) == 130, read_log(workdir)
    assert joiner.wait(timeout=30) == 0, read_log(workdir, "joiner.log")
    r = result(workdir, exp)
    assert r["counters"].get("tasks_collector7", 0) > 0, r
    assert not processes_mentioning(str(workdir))


def test_stopped_run_resumes_from_the_learners_checkpoint_and_the_coordinators_counters(workdir):
    import json

    exp = "resumed"
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9}})
    first = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "200"), workdir)
    assert first.wait(timeout=120) == 0, read_log(workdir)
    r1 = result(workdir, exp)
    with open(os.path.join(str(workdir), exp, "parallel_state.json")) as f:
        state = json.load(f)
    assert state["commander"]["envstep"] == r1["env_step"] and "max_train_iter" in state["ended"]
    rows1 = eval_rows(workdir, exp)
    # nothing left to do under the same limit: one clear line, nothing started
    again = subprocess.run(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "200", "--resume"),
                           cwd=str(workdir), capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "nothing is left to do under --train-iter 200" in again.stderr
    second = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "400", "--resume"), workdir)
    assert second.wait(timeout=120) == 0, read_log(workdir)
    r2 = result(workdir, exp)
    assert r2["train_iter"] >= 400 and r2["env_step"] > r1["env_step"]
    coordinator_log = open(os.path.join(str(workdir), exp, "log", "coordinator", "coordinator_logger.txt")).read()
    assert "continues from its checkpoint at train_iter" in coordinator_log
    with open(os.path.join(str(workdir), exp, "log", "eval.csv")) as f:
        steps = [int(line.split(",")[1]) for line in f.read().strip().splitlines()[1:]]
    assert len(steps) > rows1 and steps == sorted(steps)  # the evaluations continue the first session's
    runs = [d for d in os.listdir(str(workdir)) if os.path.isdir(os.path.join(str(workdir), d))]
    assert runs == [exp]  # the same directory continued, no renamed sibling
    assert not processes_mentioning(str(workdir))


def test_finished_run_is_refused_with_extend_named_and_extend_trains_it_on(workdir):
    exp = "extended"
    cfg = write_config(workdir, exp, main={"env": {"stop_value": -1.0}})  # the first evaluation ends the run
    first = subprocess.run(ding_cmd("-m", "parallel", "-c", cfg), cwd=str(workdir), capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    r1 = result(workdir, exp)
    assert r1["stop_flag"] is True
    refused = subprocess.run(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "60", "--resume"),
                             cwd=str(workdir), capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "is finished" in refused.stderr and "--extend" in refused.stderr, \
        refused.stderr
    assert result(workdir, exp) == r1  # refused before anything was written
    # on past where the first run ended (the learner may train tens of iterations before that first evaluation ends)
    limit = int(r1["train_iter"]) + 60
    extended = subprocess.run(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", str(limit), "--resume",
                                       "--extend"), cwd=str(workdir), capture_output=True, text=True, timeout=120)
    assert extended.returncode == 0, extended.stdout + extended.stderr
    r2 = result(workdir, exp)
    assert r2["train_iter"] >= limit and "max_train_iter" in r2["end_reason"]  # the stop value no longer ended it
def test_dist_coordinator_drives_the_run_like_the_launcher(workdir):
    """``ding -m dist --module coordinator`` with its roles started by hand: the same driver as ``ding -m parallel``
    (limits, eval log, state file, full result), only the mode differs."""
    import json

    exp = "distrun"
    token = "d" * 32
    env = {"DING_AUTH_TOKEN": token}
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9},
                                           "policy": {"collect": {"collector": {"collector_num": 1}}}})
    coordinator = start(ding_cmd("-m", "dist", "--module", "coordinator", "-c", cfg, "--env-step", "400"), workdir,
                        env=env)
    port = wait_for(lambda: _coordinator_port(os.path.join(str(workdir), "launcher.log")), 60,
                    "the coordinator's port", proc=coordinator)
    total = os.path.join(exp, "total_config.py")
    roles = [start(ding_cmd("-m", "dist", "--module", role, "--module-name", f"{role}0", "-c", total,
                            "--coordinator-host", "127.0.0.1", "--coordinator-port", str(port)), workdir, env=env,
                   log_name=f"{role}0.log") for role in ("learner", "collector")]
    assert coordinator.wait(timeout=150) == 0, read_log(workdir)
    for role, proc in zip(("learner", "collector"), roles):
        assert proc.wait(timeout=60) == 0, read_log(workdir, f"{role}0.log")
    r = result(workdir, exp)
    assert r["mode"] == "dist" and r["env_step"] >= 400 and "max_env_step" in r["end_reason"], r
    assert r["error"] is None and r["train_iter"] > 0 and r["counters"].get("tasks_collector0", 0) > 0, r
    with open(os.path.join(str(workdir), exp, "parallel_state.json")) as f:
        assert json.load(f)["commander"]["envstep"] == r["env_step"]
    assert eval_rows(workdir, exp) >= 1
    assert not processes_mentioning(str(workdir))


def test_resume_refuses_a_directory_without_parallel_state(workdir):
    cfg = write_config(workdir, "nostate")
    os.makedirs(os.path.join(str(workdir), "nostate", "ckpt"))
    open(os.path.join(str(workdir), "nostate", "ckpt", "iteration_5.pth.tar"), "wb").close()
    out = subprocess.run(ding_cmd("-m", "parallel", "-c", cfg, "--resume"), cwd=str(workdir), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1 and "has no parallel_state.json" in out.stderr, out.stderr
    assert sorted(os.listdir(os.path.join(str(workdir), "nostate"))) in (["ckpt"], [".lock", "ckpt"])  # no config


def _coordinator_port(path):
    import re

    try:
        text = open(path).read()
    except OSError:
        return None
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
    return int(m.group(1)) if m else None


def test_killed_learner_restarts_from_its_checkpoint(workdir):
    exp = "killl"
    cfg = write_config(workdir, exp, main={"policy": {"learn": {"learner": {"hook": {"save_ckpt_after_iter": 50}}}}},
                       system=FAST_FAULTS)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "600"), workdir)
    ckpt_dir = os.path.join(str(workdir), exp, "ckpt")
    wait_for(lambda: os.path.isdir(ckpt_dir) and any(f.startswith("iteration_") and f.endswith(".pth.tar")
                                                     for f in os.listdir(ckpt_dir)), 120,
             "a learner checkpoint", proc=proc)
    os.kill(wait_for(lambda: role_pid(workdir, "learner0"), 10, "learner0's pid"), signal.SIGKILL)
    assert proc.wait(timeout=150) == 0, read_log(workdir)
    coordinator_log = open(os.path.join(str(workdir), exp, "log", "coordinator", "coordinator_logger.txt")).read()
    assert "restarting it (1/3)" in coordinator_log
    assert "continues from its checkpoint at train_iter" in coordinator_log
    r = result(workdir, exp)
    assert r["train_iter"] >= 600 or r["stop_flag"], r
    assert not processes_mentioning(str(workdir))


def test_ctrl_c_saves_a_checkpoint_and_leaves_nothing_behind(workdir):
    exp = "sigint"
    cfg = write_config(workdir, exp)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg), workdir)
    wait_for(lambda: eval_rows(workdir, exp) >= 2, 90, "two evaluations", proc=proc)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=90)
    assert code == 130, read_log(workdir)
    r = result(workdir, exp)
    assert r["interrupted"] is True
    # says how to continue, with the real config path (a command that works), or that there is nothing to resume
    import shlex

    ckpts = [f for f in os.listdir(os.path.join(str(workdir), exp, "ckpt")) if f.startswith("iteration_")]
    assert ckpts
    assert f"ding: to resume: {shlex.join(['ding', '-m', 'parallel', '-c', cfg, '-s', '0', '--resume'])}" in \
        read_log(workdir)
    assert "<config>" not in read_log(workdir)
    assert any(f.startswith("iteration_") for f in os.listdir(os.path.join(str(workdir), exp, "ckpt")))
    assert not processes_mentioning(str(workdir))


def test_config_error_is_one_line_and_starts_nothing(workdir):
    exp = "bad"
    cfg = write_config(workdir, exp, system={"coordinater": {}})
    out = subprocess.run(ding_cmd("-m", "parallel", "-c", cfg), cwd=str(workdir), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1
    assert "system_config.coordinater" in out.stderr and "did you mean 'coordinator'" in out.stderr
    assert "Traceback" not in out.stderr
    assert not processes_mentioning(str(workdir))


def test_role_process_rejects_bad_requests_and_keeps_serving(workdir):
    """A real learner process: no token -> 401, pickle or broken JSON -> 400, and it still serves its master."""
    import pickle
    import threading

    import requests

    from ding.parallel.transport import TOKEN_HEADER, Master

    token = "r" * 32
    cfg = write_config(workdir, "roles")
    joined = threading.Event()
    conns = {}
    master = Master("coordinator", token=token, heartbeat_timeout=10.0)

    def on_join(info):
        conns["learner0"] = master.connect(info["name"], info["host"], info["port"], role=info["role"])
        joined.set()

    master.on_join = on_join
    master.start()
    proc = start(ding_cmd("-m", "dist", "--module", "learner", "--module-name", "learner0", "-c", cfg,
                          "--coordinator-host", "127.0.0.1", "--coordinator-port", str(master.port)), workdir,
                 env={"DING_AUTH_TOKEN": token})
    try:
        assert joined.wait(60), read_log(workdir)
        conn = conns["learner0"]
        url = f"http://127.0.0.1:{conn.port}/api/v1/task/new"
        body = b'{"task_id": "t1", "name": "resource", "payload": {}}'
        r = requests.post(url, data=body, timeout=5)
        assert r.status_code == 401 and r.json()["success"] is False
        r = requests.post(url, data=body, headers={TOKEN_HEADER: "x" * 32}, timeout=5)
        assert r.status_code == 401
        for bad in (pickle.dumps({"task_id": "t2", "name": "resource"}), b'{"task_id": "t3", '):
            r = requests.post(url, data=bad, headers={TOKEN_HEADER: token}, timeout=5)
            assert r.status_code == 400 and "JSON" in r.json()["message"]
        assert conn.resource["cpu"] >= 1  # (from the connect answer)
        closed = master.new_task(conn, "learner_close_task", {"wait_s": 1}, deadline_s=10).result(timeout=10)
        assert closed["learner_step"] == 0  # a real task, served after the bad requests
    finally:
        master.close()
    assert proc.wait(timeout=30) == 0, read_log(workdir)
