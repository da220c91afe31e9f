"""How many collectors one coordinator serves: a real :class:`Coordinator` (its own process, its real HTTP server on
loopback) driven by 16 / 64 / 256 light collectors and a stand-in learner that speak the real protocol.

The collectors are real :class:`RoleSlave`s (join, connect, heartbeats every ``heartbeat_interval``, ``task/new``,
``task/complete``), spread over a few processes; instead of stepping envs, a collect task sleeps ``--task-seconds``
(CartPole-sized: 16 samples in 0.05 s; ``--atari``: 16 samples in 0.5 s, 100 KB each) and writes its ``n_sample``
data files (``--sample-bytes`` each) to the shared directory, then answers with their metadata; an evaluation sleeps
and answers a return of 0 (so the run never stops). The learner is a protocol-speaking stand-in (its own process):
it starts, states a demand of 8 batches of 64, and "trains" each batch it is sent in ``--train-ms`` (5 ms: about
a real CartPole learner's 190 iterations/s), publishing a new policy iteration per batch. Pacing is off
(``learner_iter_per_sample=0``), so collectors run flat out and the coordinator, not the learner, is what is measured;
``--paced`` keeps the config's pacing instead, so most collectors wait in the coordinator for the learner (what
matters there is what idle collector threads cost the coordinator).

Reported per collector count, over a window after every collector has started:

- collect tasks/s and metadata items/s through the coordinator;
- dispatch latency p50/p99: from a collector's end of a task (before it reports) to its next task's arrival -- the
  report, the coordinator's bookkeeping and the next ``task/new`` round trip;
- heartbeat latency p50/p99 (the collectors' real heartbeats, timed in their client);
- the coordinator's CPU (cores: its process's user+system time / wall time), threads, open fds and RSS;
- errors: requests that failed in the collectors, collectors declared lost, failed tasks, malformed answers.

``--soak 600`` runs one count (256 by default) for 600 s and checks it stays clean: no error, no lost collector, and
no growth of the coordinator's threads, fds or memory between the end of the warm-up and the end.

    nice -n 10 .venv/bin/python tests/benchmark/bench_coordinator_scale.py                       # 16, 64, 256
    nice -n 10 .venv/bin/python tests/benchmark/bench_coordinator_scale.py --collectors 256 --soak 600
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOKEN = "s" * 32
SOAK_WARMUP_S = 60.0


# ------------------------------------------------------------------------------------------ the coordinator process
def _config(run_dir: str, heartbeat_timeout: float, paced: bool) -> Any:
    from ding.config import compile_config_parallel
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    main = json.loads(json.dumps(main_config))
    main["exp_name"] = os.path.join(run_dir, "exp")
    main["env"]["stop_value"] = 1e9
    if not paced:
        main["policy"].setdefault("other", {}).setdefault("commander", {})["learner_iter_per_sample"] = 0
    system = json.loads(json.dumps(system_config))
    system["path_data"] = os.path.join(run_dir, "data")
    system["path_policy"] = os.path.join(run_dir, "policy")
    system["auth_token"] = TOKEN
    system["coordinator"] = dict(system.get("coordinator") or {}, heartbeat_timeout=heartbeat_timeout,
                                 startup_timeout=300.0)
    return compile_config_parallel(main, json.loads(json.dumps(create_config)), system, seed=0, save_cfg=False)


def run_coordinator(run_dir: str, heartbeat_timeout: float, paced: bool) -> None:
    import ding
    from ding.worker.coordinator import Coordinator

    print(f"coordinator: ding from {os.path.dirname(ding.__file__)}", flush=True)
    coord = Coordinator(_config(run_dir, heartbeat_timeout, paced), token=TOKEN)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    coord.start()
    _write_json(os.path.join(run_dir, "coordinator.json"), {"port": coord.port})
    while not stop.wait(1.0) and not coord.wait(0):
        _write_json(os.path.join(run_dir, "coordinator_status.json"), coord.status())
    status = coord.status()
    coord.close()
    _write_json(os.path.join(run_dir, "coordinator_stats.json"), {"stats": dict(coord.stats), "status": status,
                                                                   "fatal_error": coord.fatal_error})


# ------------------------------------------------------------------------------------------ the fleet processes
class _Timings:
    """(monotonic time, seconds) of every request of this process's clients, per endpoint; and the failures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, list[tuple[float, float]]] = {}
        self.errors: list[tuple[float, str]] = []

    def wrap_client(self) -> None:
        from ding.parallel.transport import client

        original = client.HttpClient.post
        timings = self

        def timed(self: Any, endpoint: str, *args: Any, **kwargs: Any) -> dict:
            t0 = time.monotonic()
            try:
                return original(self, endpoint, *args, **kwargs)
            except Exception as e:
                with timings.lock:
                    timings.errors.append((t0, f"/{endpoint}: {type(e).__name__}: {e}"[:300]))
                raise
            finally:
                with timings.lock:
                    timings.requests.setdefault(endpoint, []).append((t0, time.monotonic() - t0))

        client.HttpClient.post = timed  # type: ignore[method-assign]


def run_fleet(run_dir: str, port: int, names: list[str], learner: bool, task_s: float, sample_bytes: int,
              train_ms: float, heartbeat_interval: float) -> None:
    import logging

    from ding.parallel.files import data_path
    from ding.parallel.protocol import (
        CollectorCloseTask,
        CollectorFinishInfo,
        CollectorStarted,
        CollectorStartTask,
        CollectResult,
        CollectTask,
        DemandAnswer,
        EvalResult,
        EvalTask,
        GetDataTask,
        LearnerClosed,
        LearnerCloseTask,
        LearnerDemand,
        LearnerStarted,
        LearnerStartTask,
        LearnInfo,
        LearnResult,
        LearnTask,
        SampleMeta,
    )
    from ding.parallel.roles.role import RoleSlave, join_coordinator
    from ding.parallel.transport.http_server import ServerLimits
    from ding.parallel.transport.slave import HEARTBEATS_PER_TIMEOUT

    logging.basicConfig(level=logging.WARNING, format=f"%(asctime)s fleet{os.getpid()} %(message)s")
    timings = _Timings()
    timings.wrap_client()
    dispatch: list[tuple[float, float]] = []
    collected: list[tuple[float, int]] = []  # (when, items) of every collect task (evaluations not counted)
    tasks = {"collect": 0, "eval": 0, "items": 0}
    lock = threading.Lock()
    blob = os.urandom(sample_bytes)

    def collector_handlers() -> dict:
        last_end: list[float | None] = [None]

        def begin() -> None:
            now = time.monotonic()
            if last_end[0] is not None:
                with lock:
                    dispatch.append((now, now - last_end[0]))

        def collect(task: CollectTask) -> CollectResult:
            begin()
            time.sleep(task_s)
            metas = []
            for i in range(task.n_sample):
                data_id = f"{task.task_id}_{i}"
                tmp = data_path(path_data, data_id) + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(blob)
                os.replace(tmp, data_path(path_data, data_id))
                metas.append(SampleMeta(data_id=data_id, collect_iter=task.train_iter))
            with lock:
                tasks["collect"] += 1
                tasks["items"] += len(metas)
                collected.append((time.monotonic(), len(metas)))
            last_end[0] = time.monotonic()
            return CollectResult(metadata=metas, envstep=task.n_sample, sample_count=task.n_sample,
                                 policy_iter=task.train_iter)

        def evaluate(task: EvalTask) -> EvalResult:
            begin()
            time.sleep(task_s)
            with lock:
                tasks["eval"] += 1
            last_end[0] = time.monotonic()
            return EvalResult(policy_iter=task.train_iter, eval_return_mean=0.0)

        return {CollectorStartTask: lambda t: CollectorStarted(), CollectTask: collect, EvalTask: evaluate,
                CollectorCloseTask: lambda t: CollectorFinishInfo()}

    step = [0]

    def learn(task: LearnTask) -> LearnResult:
        infos = []
        for _ in task.data:
            time.sleep(train_ms / 1000.0)
            step[0] += 1
            infos.append(LearnInfo(learner_step=step[0], policy_iter=step[0]))
        return LearnResult(infos=infos, trained=len(infos))

    learner_handlers = {
        LearnerStartTask: lambda t: LearnerStarted(learner_step=0, policy_iter=0),
        GetDataTask: lambda t: DemandAnswer(demand=LearnerDemand(batch_size=64, n_batches=8)),
        LearnTask: learn,
        LearnerCloseTask: lambda t: LearnerClosed(learner_step=step[0]),
    }
    path_data = os.path.join(run_dir, "data")
    # (a role's slave beats every tenth of the heartbeat_timeout it is given: ding/parallel/transport/slave.py)
    cfg = dict(host="127.0.0.1", port=0, heartbeat_timeout=heartbeat_interval * HEARTBEATS_PER_TIMEOUT,
               coordinator_host="127.0.0.1", coordinator_port=port, auth_token=TOKEN)
    logger = logging.getLogger("fleet")
    slaves = []
    joined: dict[str, float] = {}
    connect_s: list[tuple[float, float]] = []

    def on_connect(name: str) -> None:
        if name in joined:  # the first connect after this slave's join request: the coordinator's join latency
            now = time.monotonic()
            connect_s.append((now, now - joined.pop(name)))

    for name in names:
        role = "learner" if learner else "collector"
        slave = RoleSlave(cfg, name, role, TOKEN, learner_handlers if learner else collector_handlers(),
                          resource={}, logger=logger)
        slave._server.limits = ServerLimits(max_workers=2)  # light: a real collector process has 32
        slave.on_connect = lambda info, name=name: on_connect(name)
        slaves.append(slave)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    for slave in slaves:
        slave.start()

    def join(slave: Any) -> None:
        joined[slave.name] = time.monotonic()
        join_coordinator(slave, "127.0.0.1", port)

    joiners = [threading.Thread(target=join, args=(s,), daemon=True) for s in slaves]  # all at once, as at a
    for t in joiners:  # cluster's start
        t.start()
    while not stop.wait(0.5) and not all(s.wait(0) for s in slaves):
        pass
    for slave in slaves:
        slave.close("benchmark over")
    with timings.lock:
        _write_json(os.path.join(run_dir, f"fleet_{os.getpid()}.json"), {
            "requests": timings.requests, "errors": timings.errors, "dispatch": dispatch, "tasks": tasks,
            "collected": collected, "join_to_connect": connect_s})


# ------------------------------------------------------------------------------------------ the driver
def _write_json(path: str, obj: Any) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def _proc_sample(pid: int) -> dict[str, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    return {"t": time.monotonic(), "cpu": (int(fields[11]) + int(fields[12])) / tick,
            "threads": int(status["Threads"]), "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def _wait_started(run_dir: str, n: int, coord: subprocess.Popen, log: str, timeout: float = 600.0) -> None:
    """Until the coordinator has the learner's first policy and all ``n`` collectors started."""
    deadline = time.monotonic() + timeout
    status: dict = {}
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(run_dir, "coordinator_status.json")) as f:
                status = json.load(f)
        except (OSError, ValueError):
            pass
        if status.get("policy_iter", -1) >= 0 and status.get("collectors", 0) >= n:
            return
        if coord.poll() is not None:
            raise RuntimeError(f"the coordinator exited early; see {log}")
        time.sleep(0.5)
    raise RuntimeError(f"not every collector started within {timeout:g} s ({status}); see {log}")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _spawn(args: list[str], log: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    with open(log, "ab") as f:
        return subprocess.Popen([sys.executable, __file__, *args], stdout=f, stderr=subprocess.STDOUT, env=env,
                                cwd=os.path.dirname(log))


def measure(n: int, seconds: float, warmup: float, args: argparse.Namespace) -> dict[str, Any]:
    run_dir = tempfile.mkdtemp(prefix=f"ding-coord-scale-{n}-")
    log = os.path.join(run_dir, "bench.log")
    procs: list[subprocess.Popen] = []
    coord = _spawn(["--coordinator-proc", run_dir, "--heartbeat-timeout", str(args.heartbeat_timeout),
                    *(["--paced"] if args.paced else [])], log)
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(run_dir, "coordinator.json")):
            if coord.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the coordinator did not start; see {log}")
            time.sleep(0.2)
        with open(os.path.join(run_dir, "coordinator.json")) as f:
            port = json.load(f)["port"]
        common = ["--port", str(port), "--task-seconds", str(args.task_seconds), "--sample-bytes",
                  str(args.sample_bytes), "--train-ms", str(args.train_ms), "--heartbeat-interval",
                  str(args.heartbeat_interval)]
        procs.append(_spawn(["--fleet-proc", run_dir, "--names", "learner0", "--learner", *common], log))
        per = -(-n // args.procs)
        names = [f"collector{i}" for i in range(n)]
        for i in range(0, n, per):
            procs.append(_spawn(["--fleet-proc", run_dir, "--names", *names[i:i + per], *common], log))
        _wait_started(run_dir, n, coord, log)
        time.sleep(warmup)
        samples = [_proc_sample(coord.pid)]
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            time.sleep(min(10.0, max(0.1, t_end - time.monotonic())))
            samples.append(_proc_sample(coord.pid))
            if coord.poll() is not None:
                raise RuntimeError(f"the coordinator exited early; see {log}")
        coord.send_signal(signal.SIGTERM)
        coord.wait(timeout=180)
        for p in procs:  # the coordinator shut its slaves down; a fleet whose slaves it could not reach stops here
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in [coord, *procs]:
            if p.poll() is None:
                p.kill()
                p.wait()
    t0, t1 = samples[0]["t"], samples[-1]["t"]
    fleets = []
    for name in os.listdir(run_dir):
        if name.startswith("fleet_") and name.endswith(".json"):
            with open(os.path.join(run_dir, name)) as f:
                fleets.append(json.load(f))
    with open(os.path.join(run_dir, "coordinator_stats.json")) as f:
        coord_stats = json.load(f)

    def window(pairs: list) -> list[float]:
        return [v for t, v in pairs if t0 <= t <= t1]

    heartbeat = [v for fl in fleets for v in window(fl["requests"].get("heartbeat", []))]
    complete = [v for fl in fleets for v in window(fl["requests"].get("task/complete", []))]
    dispatch = [v for fl in fleets for v in window(fl["dispatch"])]
    items = [v for fl in fleets for v in window(fl["collected"])]
    errors = [e for fl in fleets for e in fl["errors"]]
    joins = [v for fl in fleets for _, v in fl["join_to_connect"]]
    stats = coord_stats["stats"]
    duration = t1 - t0
    row = {
        "collectors": n, "seconds": round(duration, 1),
        "tasks_per_s": round(len(dispatch) / duration, 1),  # collect tasks and evaluations
        "collect_tasks_per_s": round(len(items) / duration, 1),
        "items_per_s": round(sum(items) / duration, 1),
        "dispatch_ms_p50": round(1000 * _pct(dispatch, 0.5), 1),
        "dispatch_ms_p99": round(1000 * _pct(dispatch, 0.99), 1),
        "heartbeat_ms_p50": round(1000 * _pct(heartbeat, 0.5), 1),
        "heartbeat_ms_p99": round(1000 * _pct(heartbeat, 0.99), 1),
        "complete_ms_p50": round(1000 * _pct(complete, 0.5), 1),
        "join_to_connect_s_p50": round(_pct(joins, 0.5), 2), "join_to_connect_s_max": round(max(joins or [0]), 2),
        "coordinator_cores": round((samples[-1]["cpu"] - samples[0]["cpu"]) / duration, 2),
        "threads": [samples[0]["threads"], samples[-1]["threads"], max(s["threads"] for s in samples)],
        "fds": [samples[0]["fds"], samples[-1]["fds"], max(s["fds"] for s in samples)],
        "rss_mb": [round(samples[0]["rss_mb"], 1), round(samples[-1]["rss_mb"], 1),
                   round(max(s["rss_mb"] for s in samples), 1)],
        "request_errors": len(errors), "first_errors": [e[1] for e in errors[:3]],
        "lost_collector": stats.get("lost_collector", 0),
        "failed_collector_tasks": stats.get("failed_collector_tasks", 0),
        "malformed_answers": stats.get("malformed_answers", 0), "fatal_error": coord_stats["fatal_error"],
        "collectors_started": sum(1 for k in stats if k.startswith("joins_collector")),
        "load_avg": os.getloadavg()[0],
    }
    if not args.keep:
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)
    else:
        row["run_dir"] = run_dir
    return row


def soak_verdict(row: dict[str, Any]) -> list[str]:
    """What makes a soak unclean (empty: clean)."""
    bad = []
    for key in ("request_errors", "lost_collector", "failed_collector_tasks", "malformed_answers"):
        if row[key]:
            bad.append(f"{key} = {row[key]}")
    if row["fatal_error"]:
        bad.append(f"fatal error: {row['fatal_error']}")
    if row["collectors_started"] != row["collectors"]:
        bad.append(f"only {row['collectors_started']} of {row['collectors']} collectors started")
    if row["threads"][1] > row["threads"][0] + 4:
        bad.append(f"threads grew {row['threads'][0]} -> {row['threads'][1]}")
    if row["fds"][1] > row["fds"][0] + 16:
        bad.append(f"fds grew {row['fds'][0]} -> {row['fds'][1]}")
    if row["rss_mb"][1] > 1.2 * row["rss_mb"][0] + 20:
        bad.append(f"RSS grew {row['rss_mb'][0]} -> {row['rss_mb'][1]} MB")
    return bad


def main(argv: list[str] | None = None) -> list[dict[str, Any]] | None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--collectors", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--seconds", type=float, default=30.0, help="measured window per collector count")
    p.add_argument("--warmup", type=float, default=None, help="seconds before the window (default: 10 + n/8)")
    p.add_argument("--soak", type=float, default=None, help="one long window (e.g. 600) checked for a clean run")
    p.add_argument("--procs", type=int, default=4, help="processes the collectors are spread over")
    p.add_argument("--task-seconds", type=float, default=0.05)
    p.add_argument("--sample-bytes", type=int, default=512)
    p.add_argument("--atari", action="store_true", help="Atari-sized collectors: 0.5 s tasks, 100 KB samples")
    p.add_argument("--train-ms", type=float, default=5.0)
    p.add_argument("--heartbeat-interval", type=float, default=1.0)
    p.add_argument("--heartbeat-timeout", type=float, default=10.0)
    p.add_argument("--paced", action="store_true", help="keep the config's pacing (collectors wait for the learner: "
                   "most collector threads idle in the coordinator) instead of collecting flat out")
    p.add_argument("--smoke", action="store_true", help="4 collectors for 3 s (the test suite's run)")
    p.add_argument("--keep", action="store_true", help="keep each run's directory (logs, per-process JSON)")
    p.add_argument("--json", default=None, help="also write the rows to this file")
    p.add_argument("--coordinator-proc", default=None, help=argparse.SUPPRESS)
    p.add_argument("--fleet-proc", default=None, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--names", nargs="+", default=[], help=argparse.SUPPRESS)
    p.add_argument("--learner", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.coordinator_proc:
        run_coordinator(args.coordinator_proc, args.heartbeat_timeout, args.paced)
        return None
    if args.fleet_proc:
        run_fleet(args.fleet_proc, args.port, args.names, args.learner, args.task_seconds, args.sample_bytes,
                  args.train_ms, args.heartbeat_interval)
        return None
    if args.smoke:
        args.collectors, args.seconds, args.warmup, args.procs = [4], 3.0, 2.0, 2
    if args.atari:
        args.task_seconds, args.sample_bytes = 0.5, 100_000
    counts = args.collectors if args.soak is None else args.collectors[-1:]
    rows = []
    print(f"coordinator scale: tasks of {args.task_seconds:g} s, 16 samples of {args.sample_bytes} B, heartbeats "
          f"every {args.heartbeat_interval:g} s (deadline {args.heartbeat_timeout:g} s), {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    for n in counts:
        warmup = args.warmup if args.warmup is not None else (SOAK_WARMUP_S if args.soak else 10 + n / 8)
        row = measure(n, args.soak or args.seconds, warmup, args)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| collectors | collect tasks/s | items/s | dispatch p50 / p99 | heartbeat p50 / p99 | coordinator CPU "
          "| threads | errors (requests / lost / failed tasks) |\n|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['collectors']} | {r['collect_tasks_per_s']:,} | {r['items_per_s']:,.0f} | "
              f"{r['dispatch_ms_p50']} / {r['dispatch_ms_p99']} ms | {r['heartbeat_ms_p50']} / "
              f"{r['heartbeat_ms_p99']} ms | {r['coordinator_cores']:.2f} cores | {r['threads'][1]} | "
              f"{r['request_errors']} / {r['lost_collector']} / {r['failed_collector_tasks']} |")
    if args.json:
        _write_json(args.json, rows)
    if args.soak:
        bad = soak_verdict(rows[-1])
        print(f"soak {args.soak:g} s with {rows[-1]['collectors']} collectors: "
              + ("CLEAN" if not bad else "NOT CLEAN: " + "; ".join(bad)))
        if bad:
            sys.exit(1)
    return rows


if __name__ == "__main__":
    main()
