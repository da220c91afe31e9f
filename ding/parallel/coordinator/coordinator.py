"""Coordinator: the master of parallel mode. It hands tasks to learners and collectors, keeps the replay buffer of
metadata, and decides when the run ends.

One thread per connected slave drives it: a collector's thread asks the commander for the next task, sends it, and
pushes the returned metadata into the buffer; a learner's thread waits for the learner's data demand, samples
metadata for it (as far as the commander's pacing allows) and sends it in a learn task whose answer updates the
priorities. A lost slave's tasks fail (heartbeats and deadlines make sure they do) and its work goes to the next free
collector; a learner that comes back continues from the run's latest checkpoint.

Data files behind metadata that leaves the buffer are deleted — once no learn task still needs them
(:class:`DataLedger`).

Everything a peer answers is checked against its record in :mod:`ding.parallel.protocol` before it is used: a
malformed answer fails that task (handed out again like any failed task) and is logged once with the peer and the
field; it never reaches the guard that ends the run on an internal error.
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import json
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from easydict import EasyDict

from ding.config import COORDINATOR_CONFIG
from ding.parallel.commanders.base import create_parallel_commander
from ding.parallel.coordinator.buffer_state import (
    buffer_state_path,
    load_buffer_state,
    referenced_data_ids,
    save_buffer_state,
)
from ding.parallel.coordinator.comm_coordinator import CommCoordinator
from ding.parallel.coordinator.data_ledger import DataLedger
from ding.parallel.coordinator.policy_snapshots import PolicySnapshots
from ding.parallel.files import data_path, task_of
from ding.parallel.protocol import (
    DATA_ID,
    CollectorCloseTask,
    CollectorStartTask,
    CollectResult,
    CollectTask,
    DemandAnswer,
    EvalRecord,
    EvalResult,
    EvalTask,
    GetDataTask,
    LearnerClosed,
    LearnerCloseTask,
    LearnerSlot,
    LearnerStartTask,
    LearnInfo,
    LearnResult,
    LearnTask,
    ProtocolError,
    Record,
    decode_result,
)
from ding.parallel.transport import SlaveConnection, SlaveLost, TaskFailed, TaskHandle, TaskTimeout, resolve_token
from ding.utils import ConfigError, DataFileError, config_of, deep_merge_dicts, shown_dir
from ding.utils.worker_logs import CONSOLE, WorkerLogs
from ding.worker.learner.checkpoint import list_iteration_checkpoints
from ding.worker.replay_buffer import create_buffer

_MAX_WRITERS_KEPT = 100_000  # collect tasks whose collector is remembered (to name it in errors)
_MAX_TASK_FAILURES = 3  # consecutive failed tasks after which a collector is dismissed


class _LearnerLink:
    """Batches sent to one learner and not trained yet; at most ``window`` (the learner's queue)."""

    def __init__(self, batch_size: int, window: int) -> None:
        self.batch_size = batch_size
        self.window = window
        self.bad_answers = 0  # malformed learn results in a row
        self.failed_tasks = 0  # learn tasks in a row that the learner answered with an error
        self._in_flight = 0
        self._lock = threading.Lock()

    def room(self) -> int:
        with self._lock:
            return self.window - self._in_flight

    def sent(self, n: int) -> None:
        with self._lock:
            self._in_flight += n

    def done(self, n: int) -> None:
        with self._lock:
            self._in_flight -= n


class Coordinator:
    """See the module docstring. ``cfg`` is the compiled parallel config: ``EasyDict(main=..., system=..., seed=...)``
    (``compile_config_parallel``). ``on_eval(record)`` (an :class:`EvalRecord`) / ``on_end(reason)`` are optional
    observers; ``max_env_step`` / ``max_train_iter`` end the run (None or >= 1e10: no limit)."""

    config = COORDINATOR_CONFIG  # documented key by key in ding/config/parallel.py

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any, token: str | None = None, on_eval: Callable[[EvalRecord], None] | None = None,
                 on_end: Callable[[str], None] | None = None, max_env_step: int | None = None,
                 max_train_iter: int | None = None, resume: bool = False, tb_logger: Any = None) -> None:
        self._cfg = cfg
        main, system = cfg.main, cfg.system
        self._main = main
        self._coor_cfg = deep_merge_dicts(self.default_config(), system.get("coordinator", {}))
        self._exp_name = main.exp_name
        self._seed = int(cfg.get("seed", main.get("seed", 0)))  # the config's seed
        self._path_data = system.path_data
        self._path_policy = system.path_policy
        token = resolve_token(token if token else system.get("auth_token"))  # before anything is written
        for key in ("path_data", "path_policy"):  # the shared directories: a clear error before anything starts
            try:
                os.makedirs(system[key], exist_ok=True)
            except OSError as e:
                raise ConfigError(f"system_config.{key}: cannot create the shared directory {system[key]!r} "
                                  f"({e.strerror or e}); give a directory every role can write") from None
        self._logs = WorkerLogs(self._exp_name, "coordinator", tb_logger=tb_logger)  # the caller's: it closes it
        self._logger, self._tb = self._logs.logger, self._logs.tb_logger
        try:
            self._main_json = json.loads(json.dumps(main, allow_nan=True))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"the compiled main config cannot be sent to the learners and collectors as JSON: {e}; "
                              "config values must be numbers, strings, booleans, None, lists and dicts") from e
        self._commander = create_parallel_commander(main)
        self._commander.set_path_policy(self._path_policy)
        self._snapshots = PolicySnapshots(self._path_policy, self._exp_name, self._logger)
        self._commander.snapshot_policy = self._snapshots.take  # an evaluation split over collectors: one snapshot
        self._commander.drop_snapshot = self._snapshots.drop
        if max_env_step is not None and max_env_step < int(1e10):
            self._commander.max_env_step = max_env_step
        if max_train_iter is not None and max_train_iter < int(1e10):
            self._commander.max_train_iter = max_train_iter
        self._comm = CommCoordinator(self._coor_cfg, self._logger, token, on_new_slave=self._new_slave,
                                     on_lost_slave=self._lost_slave)
        self._buffers: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._progress = threading.Condition()  # the learner threads (and threads before the first policy) wait here
        self._work_ready = threading.Condition()  # idle collector threads wait here, woken one at a time
        self._work_gen = 0  # counts the wake-ups of collector threads (a thread waits only if none came meanwhile)
        self._threads: list[threading.Thread] = []
        self._ending = threading.Event()
        self._done = threading.Event()
        self._end_reason: str | None = None
        self.fatal_error: str | None = None
        self._collector_index = 0
        self._collector_names: dict[str, int] = {}
        self._started = False
        self._start_time = time.monotonic()
        self._train_start: float | None = None  # when the first collector started (the roles' start-up is over)
        self._train_end: float | None = None  # when the shutdown (the learner's last checkpoint) was over
        self._on_eval = on_eval
        self._on_end = on_end
        self.stats: collections.Counter[str] = collections.Counter()
        self._writer_of: collections.OrderedDict[str, str] = collections.OrderedDict()  # collect task -> collector
        self.learner_closed: LearnerClosed | None = None  # the learner's last close answer (its timing for result)
        self._ledger = DataLedger(self._path_data, self._logger, self.stats)
        self._resume = resume  # continue with the buffers saved in <exp>/parallel_buffer.dat
        self._buffer_file = buffer_state_path(self._exp_name)
        self._buffers_saved_at = -math.inf
        self._evals_recorded = 0  # evaluations of the commander's history already in eval.csv

    # ---------------------------------------------------------------- lifecycle
    @property
    def host(self) -> str:
        return self._comm.host

    @property
    def port(self) -> int:
        return self._comm.port

    @property
    def commander(self) -> Any:
        return self._commander

    def start(self) -> None:
        """Start the HTTP server, connect configured slaves, accept joining ones."""
        with self._lock:  # a resumed run's evaluations (loaded into the commander) are in eval.csv already
            self._evals_recorded = len(self._commander.eval_history)
        os.makedirs(self._path_data, exist_ok=True)
        os.makedirs(self._path_policy, exist_ok=True)
        if self._resume:
            self._restore_buffers()
        self._comm.start()
        self._started = True
        self._spawn(self._watch_startup, "ding-startup-watch")
        self._spawn(self._watch_learner_progress, "ding-learner-watchdog")
        self.info(f"coordinator listening on {self.host}:{self.port}")

    def _spawn(self, target: Callable, name: str, *args: Any) -> None:
        def guarded() -> None:  # an unexpected error in any coordinator thread ends the run; it never hangs it
            try:
                target(*args)
            except Exception as e:  # noqa: BLE001 -- reported as the run's error, with the traceback in the log
                self._logger.exception(f"coordinator thread {name} failed")
                self.fail(f"internal error in {name}: {type(e).__name__}: {e}")

        t = threading.Thread(target=guarded, name=name, daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def _watch_startup(self) -> None:
        deadline = time.monotonic() + float(self._coor_cfg.startup_timeout)
        while not self._ending.is_set():
            status = self._commander.status()
            if status.policy_iter >= 0 and status.collectors > 0:
                return
            if time.monotonic() > deadline:
                missing = "learner" if status.policy_iter < 0 else "collector"
                self.fail(f"no {missing} came up within startup_timeout "
                            f"({self._coor_cfg.startup_timeout:g} s); see the role logs under "
                            f"{shown_dir(self._exp_name)}log/")
                return
            self._ending.wait(0.2)

    def _watch_learner_progress(self) -> None:
        """The watchdog: a learner that is connected and has data to train on, but makes no train iteration for
        ``learner_stall_timeout`` seconds, is stuck (alive to its heartbeats, dead to its work). It is dismissed: a
        launcher restarts it from its checkpoint, and if none comes back the run ends after ``startup_timeout``
        with a message naming it -- a run never looks alive while doing nothing."""
        limit = float(self._coor_cfg.learner_stall_timeout)
        last_step, since = None, time.monotonic()
        while not self._ending.wait(min(1.0, limit / 4)):
            status = self._commander.status()
            learners = self._comm.master.slaves(role="learner", alive_only=True)
            ready = bool(learners) and status.policy_iter >= 0 and self._commander.learner_may_train(
                sum(b.count() for b in list(self._buffers.values())))
            if not ready or status.learner_step != last_step:
                last_step, since = status.learner_step, time.monotonic()
                continue
            if time.monotonic() - since > limit:
                for conn in learners:
                    self.stats["stalled_learner"] += 1
                    self.notice(f"learner '{conn.name}' at {conn.host}:{conn.port} made no train iteration for "
                                f"{limit:g} s (learner_stall_timeout) while data was ready: dismissing it")
                    self._comm.master.disconnect(conn, "no training progress (learner_stall_timeout)", shutdown=True)
                    self._lost_slave(conn, "no training progress")
                since = time.monotonic()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def end_reason(self) -> str | None:
        return self._end_reason

    def end(self, reason: str) -> None:
        """End the run: stop handing out tasks, let the learner write its checkpoint, shut every slave down."""
        with self._lock:
            if self._ending.is_set():
                return
            self._end_reason = reason
            self._ending.set()
        self._commander.request_end(reason)
        self.info(f"ending the run: {reason}")
        self._notify(everyone=True)
        threading.Thread(target=self._shutdown, name="ding-coordinator-shutdown", daemon=True).start()

    def fail(self, message: str) -> None:
        """End the run with an error (the first one given is the run's ``fatal_error``)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = message
        self.error(message)
        self.end(f"error: {message}")

    def refused_requests(self) -> int:
        """Requests the coordinator's server refused for a missing or wrong token."""
        return self._comm.master.refused_requests()

    def _shutdown(self) -> None:
        try:
            deadline = time.monotonic() + 90.0
            for t in list(self._threads):
                if t is not threading.current_thread():
                    t.join(timeout=max(0.1, deadline - time.monotonic()))
            self._comm.close(self._end_reason or "run finished")
            self._close_buffers()
            self._snapshots.sweep()
            if self._on_end is not None:
                self._on_end(self._end_reason or "")
        except Exception:  # noqa: BLE001 -- shutting down must finish; the error is in the log
            self._logger.exception("coordinator shutdown failed")
        finally:
            self._train_end = time.monotonic()
            self._logs.close()
            self._done.set()

    def abort(self, reason: str = "aborted") -> None:
        """Stop at once (a second Ctrl-C): no checkpoint, no goodbye to the slaves (their processes are killed or
        exit when the coordinator stays unreachable). Idempotent."""
        with self._lock:
            self._end_reason = self._end_reason or reason
            self._ending.set()
        self._commander.request_end(reason)
        self._notify(everyone=True)
        self._comm.master.close(disconnect=False, reason=reason)
        self._close_buffers()
        self._logs.close()
        self._done.set()

    # ---------------------------------------------------------------- the buffers across a resume
    def _restore_buffers(self) -> None:
        states = load_buffer_state(self._buffer_file)
        for buffer_id, state in states.items():
            self._buffer(buffer_id).load_state_dict(state)
        ids = referenced_data_ids(states)
        self._ledger.keep(ids)
        swept = self._ledger.sweep()  # files no saved item refers to (tasks that ended after the save)
        self._ledger = DataLedger(self._path_data, self._logger, self.stats)  # a fresh ledger: kept ids may go again
        self._ledger.added(ids)
        missing = sum(not _data_file_exists(self._path_data, i) for i in ids)
        self.notice(f"resumed the replay buffer: {len(ids):,} items ({missing:,} of their files are gone and will be "
                    f"skipped); {swept:,} stray data files removed")

    def _save_buffers(self, min_interval: float = 0.0) -> set[str]:
        """Write the buffers' state (at most every ``min_interval`` seconds); returns the data ids it refers to."""
        now = time.monotonic()
        if now - self._buffers_saved_at < min_interval:
            return set()
        with self._lock:
            ids = save_buffer_state(self._buffer_file, dict(self._buffers))
        self._buffers_saved_at = now
        return ids

    def _close_buffers(self) -> None:
        """At the end: a run that can be continued keeps its buffers (saved) and their files; a finished one (its
        stop value reached) deletes both."""
        if self._buffers and not self._commander.reached_stop_value:
            self._ledger.keep(self._save_buffers())
        elif os.path.exists(self._buffer_file):
            os.unlink(self._buffer_file)
        for buf in self._buffers.values():
            buf.close()  # evicts everything: the data files not kept go with it
        self._ledger.sweep()

    def close(self) -> None:
        """End the run (if still running) and wait until everything is shut down. Idempotent."""
        if not self._started:
            self._logs.close()
            return
        self.end(self._end_reason or "coordinator closed")
        self._done.wait(120.0)

    def state_dict(self) -> dict[str, Any]:
        return self._commander.state_dict()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self._commander.load_state_dict(state_dict)
        with self._lock:
            self._evals_recorded = len(self._commander.eval_history)  # (recorded by the run that made them)

    def info(self, s: str) -> None:
        self._logger.info(s)

    def error(self, s: str) -> None:
        self._logger.error(s, extra=CONSOLE)

    def notice(self, s: str) -> None:
        """Log ``s`` and show it on the console (faults and recoveries the user should see)."""
        self._logger.warning(s, extra=CONSOLE)

    def _notify(self, everyone: bool = False) -> None:
        """Something changed: the learner threads look again, and so does one idle collector thread -- which wakes
        the next when it finds a task (:meth:`_wake_collector`), so wake-ups follow the work there is instead of
        waking every collector thread at every event (with hundreds of collectors: hundreds of wake-ups per
        event). ``everyone``: every collector thread too (the run ends)."""
        with self._progress:
            self._progress.notify_all()
        with self._work_ready:
            self._work_gen += 1
            if everyone:
                self._work_ready.notify_all()
            else:
                self._work_ready.notify()

    def _wake_collector(self) -> None:
        with self._work_ready:
            self._work_gen += 1
            self._work_ready.notify()

    def _wait_for_work(self, seen: int, timeout: float) -> None:
        """Wait until a collector thread is woken, unless one was since ``seen`` (``_work_gen`` before the thread
        last looked for a task): no wake-up is lost between looking and waiting."""
        with self._work_ready:
            if self._work_gen == seen:
                self._work_ready.wait(timeout)

    def _wait_progress(self, timeout: float) -> None:
        with self._progress:
            self._progress.wait(timeout)

    # ---------------------------------------------------------------- slaves arriving and leaving
    def _new_slave(self, conn: SlaveConnection) -> None:
        if self._ending.is_set():
            return
        if conn.role == "learner":
            self._spawn(self._learner_loop, f"ding-coord-{conn.name}", conn)
        else:
            with self._lock:
                if conn.name not in self._collector_names:
                    self._collector_names[conn.name] = self._collector_index
                    self._collector_index += 1
                # a collector that comes back (restarted) gets new env seeds, not a replay of its first life
                index = self._collector_names[conn.name] + 1000 * self.stats[f"joins_{conn.name}"]
                self.stats[f"joins_{conn.name}"] += 1
            self._spawn(self._collector_loop, f"ding-coord-{conn.name}", conn, index)

    def _lost_slave(self, conn: SlaveConnection, reason: str) -> None:
        self.stats[f"lost_{conn.role}"] += 1
        self.notice(f"{conn.role} '{conn.name}' lost ({reason}); its tasks fail and their work is handed out again")
        self._notify(everyone=True)

    def deal_with_increase_collector(self) -> None:
        self._commander.increase_collector_task_space()
        self._notify()

    def deal_with_decrease_collector(self) -> None:
        self._commander.decrease_collector_task_space()
        self._notify()

    # ---------------------------------------------------------------- buffers and data files
    def _buffer(self, buffer_id: str) -> Any:
        with self._lock:
            buf: Any = self._buffers.get(buffer_id)
            if buf is None:
                cfg = copy.deepcopy(self._main.policy.other.replay_buffer)
                cfg.enable_track_used_data = True  # evicted metadata means a data file to delete
                buf = create_buffer(cfg, tb_logger=self._tb, exp_name=self._exp_name, instance_name=buffer_id)
                buf.set_used_data_callback(self._evicted)
                self._buffers[buffer_id] = buf
            return buf

    def _evicted(self, items: list) -> None:
        """The buffer let go of these items: their files go once no learn task needs them (the ledger decides)."""
        self._ledger.evicted([item[DATA_ID] for item in items if isinstance(item, Mapping) and DATA_ID in item])

    def deal_with_collector_send_data(self, task_id: str, buffer_id: str, data_id: str | None, data: Any) -> None:
        """Store a collector's metadata (one dict or a list) in the buffer ``buffer_id``."""
        items = data if isinstance(data, list) else [data]
        # (before the push: a full buffer may let go of some of them at once)
        self._ledger.added(item[DATA_ID] for item in items if isinstance(item, Mapping) and DATA_ID in item)
        self._buffer(buffer_id).push(items, cur_collector_envstep=self._commander.status().envstep)

    def deal_with_collector_finish_task(self, task: CollectTask | EvalTask, result: CollectResult | EvalResult) -> bool:
        """A collector task ended; True when this ends the run (an evaluation reached the stop value)."""
        reached = self._commander.finish_collector_task(task.task_id, result)
        if isinstance(result, EvalResult):
            with self._lock:  # an evaluation split over collectors is recorded once, when its last shard is in
                history = self._commander.eval_history
                new, self._evals_recorded = history[self._evals_recorded:], len(history)
            for record in new:
                self._record_eval(dataclasses.replace(record, wall_time=time.monotonic() - self._start_time))
        elif result.episode_returns:
            returns = result.episode_returns
            step = self._commander.status().envstep
            self._tb.add_scalar("collector_step/episode_return_mean", sum(returns) / len(returns), step)
        end = self._commander.end_reason
        if end is not None:
            self.end(end)
        self._notify()
        return reached

    def _record_eval(self, record: EvalRecord) -> None:
        it, step = record.train_iter, record.env_step
        self._tb.add_scalar("evaluator_step/eval_episode_return_mean", record.eval_return_mean, step)
        self._tb.add_scalar("evaluator_iter/eval_episode_return_mean", record.eval_return_mean, it)
        won = "" if record.win_rate is None else f" | win rate {record.win_rate:.0%}"
        self._logger.info(f"[eval] iter {it:,} | env steps {step:,} | return {record.eval_return_mean:.4g} ± "
                          f"{record.eval_return_std:.3g}{won} | {record.wall_time:.1f} s", extra=CONSOLE)
        self._save_buffers(min_interval=float(self._coor_cfg.buffer_save_interval))
        if self._on_eval is not None:
            self._on_eval(record)

    def deal_with_learner_get_data(self, task_id: str, buffer_id: str, batch_size: int, cur_learner_iter: int,
                                   n_batches: int = 1) -> list[list[dict]]:
        """Up to ``n_batches`` batches of metadata for a learner, as far as pacing allows (maybe none). Their data
        files are pinned: the caller unpins them (``self._ledger.unpin``) once the learner is done with them."""
        buf = self._buffer(buffer_id)
        batches: list[list[dict]] = []
        with self._lock, self._ledger.sampling():  # sample and pin in one step: no file of a sampled item can go
            while len(batches) < n_batches and self._commander.learner_may_train(buf.count()):
                meta = buf.sample(batch_size, cur_learner_iter)
                if meta is None:
                    break
                self._commander.batch_served()
                self._ledger.pin(m[DATA_ID] for m in meta)
                batches.append(meta)
        return batches

    def deal_with_learner_send_info(self, task_id: str, buffer_id: str, info: LearnInfo) -> None:
        """One iteration's learn info: priorities to the buffer, progress to the commander."""
        if info.priority_info is not None:
            self._buffer(buffer_id).update(info.priority_info.to_json())
        self._commander.update_learner_info(task_id, info)  # (the learner logs its own learner_iter/* scalars)
        end = self._commander.end_reason
        if end is not None and not self._ending.is_set():
            self.end(end)

    def deal_with_learner_finish_task(self, task_id: str, finished_task: Any) -> str:
        return self._commander.finish_learner_task(task_id, finished_task)

    # ---------------------------------------------------------------- peers' answers
    def _ask(self, conn: SlaveConnection, task: Record, deadline_s: float) -> Any:
        """Send ``task`` and wait for its answer, checked against the task's result record (ProtocolError)."""
        answer = self._comm.master.new_task(conn, task.TASK.value, task.to_json(),  # type: ignore[attr-defined]
                                            deadline_s=deadline_s).result()
        return decode_result(task, answer, self._peer(conn))

    @staticmethod
    def _peer(conn: SlaveConnection) -> str:
        return f"{conn.role} '{conn.name}' at {conn.host}:{conn.port}"

    def _malformed(self, conn: SlaveConnection, err: ProtocolError, what: str) -> None:
        """A peer sent a malformed answer: that task failed (logged once, with the peer and the field)."""
        self.stats["malformed_answers"] += 1
        self.notice(f"{err}; {what}")

    def _dismiss(self, conn: SlaveConnection, reason: str) -> None:
        self.error(f"{self._peer(conn)} {reason}; dismissed")
        self._comm.master.disconnect(conn, reason, shutdown=True)

    # ---------------------------------------------------------------- the learner's thread
    def _learner_loop(self, conn: SlaveConnection) -> None:
        cfg = self._coor_cfg
        slot: LearnerSlot | None = None
        while slot is None and not self._ending.is_set() and conn.alive:
            slot = self._commander.get_learner_task()
            if slot is None:
                self._wait_progress(0.2)  # another learner holds the slot (or is being replaced)
        if slot is None:
            return
        ckpt_dir = os.path.join(self._exp_name, "ckpt")
        start = LearnerStartTask(task_id=slot.task_id, main_config=self._main_json, path_data=self._path_data,
                                 path_policy=self._path_policy, policy_id=slot.policy_id, buffer_id=slot.buffer_id,
                                 seed=self._seed,
                                 load_path=ckpt_dir if list_iteration_checkpoints(ckpt_dir) else None)
        try:
            started = self._ask(conn, start, float(cfg.learner_task_timeout))
        except SlaveLost:
            self._commander.notify_fail_learner_task(slot)
            return
        except TaskFailed as e:
            self._commander.notify_fail_learner_task(slot)
            if conn.alive:  # (a learner that died meanwhile is restarted or rejoins; that is not this error)
                self.fail(f"learner '{conn.name}' could not start: {e}")
            return
        except ProtocolError as e:
            self._commander.notify_fail_learner_task(slot)
            self._malformed(conn, e, "the learner's start failed")
            self._dismiss(conn, "answered its start task with a malformed record")
            self._check_role_left("learner")
            return
        if started.loaded:
            self.info(f"learner '{conn.name}' continues from its checkpoint at train_iter {started.learner_step}")
        self._commander.learner_started(slot.task_id, started)
        self._notify()
        lost = False
        try:
            demand = self._learner_demand(conn)
            if demand is not None:
                link = _LearnerLink(demand.batch_size, demand.n_batches)
                while not self._ending.is_set() and conn.alive:
                    if not self._feed(conn, slot, link):
                        self._wait_progress(0.05)
        except SlaveLost:
            lost = True
        except TaskFailed as e:
            if not self._ending.is_set() and conn.alive:
                self.fail(f"learner '{conn.name}' failed: {e}")
        if lost or not conn.alive:
            self._commander.notify_fail_learner_task(slot)
            self._check_role_left("learner")
            return
        try:
            final = self._ask(conn, LearnerCloseTask(wait_s=60.0), 90.0)
            self.learner_closed = final
            self._commander.update_learner_info(slot.task_id, LearnInfo(learner_step=final.learner_step))
            self.deal_with_learner_finish_task(slot.task_id, final)
            self.info(f"learner '{conn.name}' closed at train_iter {final.learner_step}")
        except (TaskFailed, ProtocolError) as e:
            self.error(f"learner '{conn.name}' did not close cleanly: {e}")

    def _learner_demand(self, conn: SlaveConnection) -> Any:
        """The learner's data demand: its batch size and how many batches it keeps queued (asked once). None when
        the learner was dismissed for malformed answers."""
        wait = float(self._coor_cfg.data_wait)
        bad = 0
        while not self._ending.is_set() and conn.alive:
            try:
                answer: DemandAnswer = self._ask(conn, GetDataTask(wait_s=wait), wait + 10.0)
            except ProtocolError as e:
                bad += 1
                self._malformed(conn, e, "asking again")
                if bad >= _MAX_TASK_FAILURES:
                    self._dismiss(conn, f"sent {bad} malformed data demands in a row")
                    return None
                continue
            if answer.demand is not None:
                return answer.demand
        raise SlaveLost(f"learner '{conn.name}' gave no data demand before the run ended")

    def _feed(self, conn: SlaveConnection, slot: LearnerSlot, link: _LearnerLink) -> bool:
        """Keep the learner's queue full: send as many batches as it has room for and pacing allows (one learn
        task). Batches go out before the learner asks, so it never waits for a round trip; False if none went."""
        # at most a quarter of the window per task: a learn task ends only when all its batches are trained, so with
        # several tasks in flight the next batches arrive while the learner still trains the previous ones
        room = min(link.room(), max(1, link.window // 4))
        if room <= 0:
            return False
        batches = self.deal_with_learner_get_data(slot.task_id, slot.buffer_id, link.batch_size,
                                                  self._commander.status().learner_step, room)
        if not batches:
            return False
        ids = [m[DATA_ID] for b in batches for m in b]  # pinned by deal_with_learner_get_data
        link.sent(len(batches))
        self._wake_collector()  # batches served: pacing may let collection go on
        timeout = float(self._coor_cfg.learner_task_timeout)
        task = LearnTask.of_batches(batches, envstep=self._commander.status().envstep, wait_s=timeout)
        handle = self._comm.master.new_task(conn, task.TASK.value, task.to_json(), deadline_s=timeout + 5.0)

        def on_done(h: TaskHandle) -> None:
            link.done(len(batches))
            self._learned(conn, slot, task, link, ids, h)

        handle.add_done_callback(on_done)
        return True

    def _learned(self, conn: SlaveConnection, slot: LearnerSlot, task: LearnTask, link: _LearnerLink,
                 ids: list[str], handle: Any) -> None:
        try:
            self._take_learn_result(conn, slot, task, link, ids, handle)
        except Exception as e:  # noqa: BLE001 -- runs in an HTTP thread: report it as the run's error
            self._logger.exception("handling a learn result failed")
            self.fail(f"internal error handling a learn result of '{conn.name}': {type(e).__name__}: {e}")

    def _writers(self, data_ids: list[str]) -> str:
        """The collectors that wrote data files ``data_ids``, in words."""
        names = sorted({self._writer_of.get(task_of(i) or "", "") for i in data_ids} - {""})
        return ", ".join(f"collector '{n}'" for n in names) if names else f"{len(data_ids)} data file(s)"

    def _take_learn_result(self, conn: SlaveConnection, slot: LearnerSlot, task: LearnTask, link: _LearnerLink,
                           ids: list[str], handle: Any) -> None:
        self._ledger.unpin(ids)
        err = handle.error
        if err is not None:
            if isinstance(err, SlaveLost) or self._ending.is_set() or not conn.alive:
                return
            link.failed_tasks += 1
            if link.failed_tasks >= _MAX_TASK_FAILURES:  # the learner itself, not one task's data
                self.fail(f"learner '{conn.name}' failed: {err} ({link.failed_tasks} learn tasks in a row)")
                return
            self._logger.error(f"learner '{conn.name}': a learn task failed ({err}); its {len(task.data)} batch(es) "
                               f"are dropped (data from {self._writers(ids)}); the run goes on")
            self.stats["failed_learn_tasks"] += 1
            return
        link.failed_tasks = 0
        try:
            result = decode_result(task, handle.result(), self._peer(conn))
            assert isinstance(result, LearnResult)
        except ProtocolError as e:  # that learn task failed: its batches are not trained, the run goes on
            link.bad_answers += 1
            self._malformed(conn, e, f"its {len(task.data)} batch(es) are dropped")
            if link.bad_answers >= _MAX_TASK_FAILURES and conn.alive:
                self._dismiss(conn, f"sent {link.bad_answers} malformed learn results in a row")
            return
        link.bad_answers = 0
        for info in result.infos:
            self.deal_with_learner_send_info(slot.task_id, slot.buffer_id, info)
        if result.skipped_files:
            self.stats["skipped_files"] += result.skipped_files
            self._logger.warning(f"learner '{conn.name}' skipped {result.skipped_files} missing or damaged data "
                                 "file(s)")
        self._notify()

    # ---------------------------------------------------------------- a collector's thread
    def _collector_loop(self, conn: SlaveConnection, index: int) -> None:
        cfg = self._coor_cfg
        while self._commander.status().policy_iter < 0 and not self._ending.is_set() and conn.alive:
            self._wait_progress(0.2)  # the learner publishes the first policy
        if self._ending.is_set() or not conn.alive:
            return
        start = CollectorStartTask(main_config=self._main_json, path_data=self._path_data,
                                   path_policy=self._path_policy, policy_id=self._commander.get_policy_id(),
                                   seed=self._seed + 1000 * (index + 1))
        try:
            self._ask(conn, start, max(60.0, float(cfg.collector_task_timeout)))
        except SlaveLost:
            return
        except TaskFailed as e:
            if conn.alive:
                self.fail(f"collector '{conn.name}' could not start: {e}")
            return
        except ProtocolError as e:
            self._malformed(conn, e, "the collector's start failed")
            self._dismiss(conn, "answered its start task with a malformed record")
            self._check_role_left("collector")
            return
        self.info(f"collector '{conn.name}' started")
        with self._lock:
            if self._train_start is None:
                self._train_start = time.monotonic()
        self.deal_with_increase_collector()
        failures = 0
        try:
            while not self._ending.is_set() and conn.alive:
                seen = self._work_gen
                task = self._commander.get_collector_task(conn.name)
                if task is None:
                    # (the timeout: time-based evaluations, a safety net; short with few collectors, whose idle
                    # time is the run's time, long with many, whose polls would load the coordinator)
                    self._wait_for_work(seen, min(0.5, max(0.05, 0.0125 * len(self._collector_names))))
                    continue
                self._wake_collector()  # there was work: another idle collector may find some too
                limit = float(cfg.eval_task_timeout if isinstance(task, EvalTask) else cfg.collector_task_timeout)
                handle = self._comm.master.new_task(conn, task.TASK.value, task.to_json(), deadline_s=limit)
                try:
                    result = self._collector_result(conn, task, handle)
                except (TaskFailed, ProtocolError) as e:
                    self._commander.notify_fail_collector_task(task)
                    self.stats["failed_collector_tasks"] += 1
                    if isinstance(e, TaskTimeout) and not self._quiesce(conn, handle, limit):
                        break
                    self._ledger.drop_task(task.task_id)
                    if isinstance(e, ProtocolError):
                        self._malformed(conn, e, f"task {task.task_id} failed; its work goes to the next free "
                                                 "collector")
                    else:
                        self.info(f"collector task {task.task_id} on '{conn.name}' failed ({e}); its work goes to "
                                  "the next free collector")
                    if isinstance(e, SlaveLost):
                        break
                    failures += 1
                    if failures >= _MAX_TASK_FAILURES:
                        kind = "eval" if isinstance(task, EvalTask) else "collector"
                        hint = (f" (a task must finish within {kind}_task_timeout = {limit:g} s)"
                                if isinstance(e, TaskTimeout) else "")
                        self._dismiss(conn, f"failed {failures} tasks in a row{hint}. Last error: {e}\n"
                                            f"{getattr(e, 'remote_traceback', '')}")
                        break
                    continue
                failures = 0
                self.stats[f"tasks_{conn.name}"] += 1
                if isinstance(result, CollectResult) and result.metadata:
                    self._writer_of[task.task_id] = conn.name  # (named when a learn task fails on this data)
                    while len(self._writer_of) > _MAX_WRITERS_KEPT:
                        self._writer_of.popitem(last=False)
                    self.deal_with_collector_send_data(task.task_id, task.buffer_id, None,
                                                       [m.to_json() for m in result.metadata])
                self.deal_with_collector_finish_task(task, result)
        finally:
            self.deal_with_decrease_collector()
        if conn.alive:
            try:
                self._ask(conn, CollectorCloseTask(), 30.0)
            except (TaskFailed, ProtocolError) as e:
                self.info(f"collector '{conn.name}' did not close cleanly: {e}")
        self._check_role_left("collector")

    def _collector_result(self, conn: SlaveConnection, task: CollectTask | EvalTask,
                          handle: TaskHandle) -> CollectResult | EvalResult:
        """The answer to a collector task, checked (a collect task's data files must exist as regular files under
        path_data, named after the task)."""
        result = decode_result(task, handle.result(), self._peer(conn))
        assert isinstance(result, (CollectResult, EvalResult))
        if isinstance(result, CollectResult):
            problem = self._ledger.check_written(m.data_id for m in result.metadata)
            if problem:
                raise ProtocolError("CollectResult", "metadata.data_id", problem, self._peer(conn))
        return result

    def _quiesce(self, conn: SlaveConnection, handle: TaskHandle, limit: float) -> bool:
        """A task passed its deadline: cancel it in the collector and wait until the collector runs nothing, so no
        file of it is written after its data is deleted and the next task does not queue behind it. A collector that
        does not stop within another ``limit`` seconds is dismissed (False)."""
        master = self._comm.master
        master.cancel(conn, handle)
        if master.wait_idle(conn, limit):
            return True
        if conn.alive:
            self.error(f"collector '{conn.name}' at {conn.host}:{conn.port} did not stop task {handle.task_id} within "
                       f"{limit:g} s of its cancellation; dismissed")
            master.disconnect(conn, "a cancelled task did not stop", shutdown=True)
        return False

    def _check_role_left(self, role: str) -> None:
        """The last learner or collector is gone: wait ``startup_timeout`` for one to (re)join, then give up."""
        if self._ending.is_set() or self._comm.master.slaves(role=role, alive_only=True):
            return
        self.notice(f"no {role} is connected; waiting up to startup_timeout "
                    f"({self._coor_cfg.startup_timeout:g} s) for one to join")
        self._spawn(self._wait_for_role, f"ding-{role}-watch", role)

    def _wait_for_role(self, role: str) -> None:
        deadline = time.monotonic() + float(self._coor_cfg.startup_timeout)
        while not self._ending.is_set():
            if self._comm.master.slaves(role=role, alive_only=True):
                return
            if time.monotonic() > deadline:
                self.fail(f"every {role} is gone and none joined within startup_timeout "
                            f"({self._coor_cfg.startup_timeout:g} s)")
                return
            self._ending.wait(0.5)

    @property
    def training_seconds(self) -> float | None:
        """Seconds from the first collector's start to the end of the shutdown: the run's training time without
        the roles' process start-up (what ``wall_time_s`` of a serial run measures). None if training never began."""
        if self._train_start is None:
            return None
        return (self._train_end or time.monotonic()) - self._train_start

    def status(self) -> dict[str, Any]:
        master = self._comm.master
        return dict(self._commander.status().to_json(), buffer_count=sum(b.count() for b in self._buffers.values()),
                    wall_time=time.monotonic() - self._start_time,
                    learners=len(master.slaves(role="learner", alive_only=True)),
                    collectors_connected=len(master.slaves(role="collector", alive_only=True)))


def _data_file_exists(path_data: str, data_id: str) -> bool:
    """Whether the data file holding ``data_id`` is there (False for a malformed id)."""
    try:
        return os.path.exists(data_path(path_data, data_id))
    except DataFileError:
        return False


