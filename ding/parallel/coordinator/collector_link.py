"""CollectorLink: one thread per collector starts it once there is a policy, hands it the commander's tasks one after
another and closes it; a failed or malformed task is handed out again, three in a row dismiss the collector."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ding.parallel.coordinator.buffers import ReplayBuffers
from ding.parallel.coordinator.run_context import MAX_TASK_FAILURES, RunContext, peer
from ding.parallel.protocol import (
    CollectorCloseTask,
    CollectorStartTask,
    CollectResult,
    CollectTask,
    EvalResult,
    EvalTask,
    ProtocolError,
    decode_result,
)
from ding.parallel.transport import SlaveConnection, SlaveLost, TaskFailed, TaskHandle, TaskTimeout


class CollectorLink:
    def __init__(self, ctx: RunContext, buffers: ReplayBuffers, report_evals: Callable[[], None],
                 role_left: Callable[[str], None]) -> None:
        self._ctx = ctx
        self._buffers = buffers
        self._report_evals = report_evals
        self._role_left = role_left
        self._lock = threading.Lock()
        self._index: dict[str, int] = {}  # collector name -> its index (the order in which collectors first came)
        self.train_start: float | None = None  # when the first collector started (the roles' start-up is over)

    def run(self, conn: SlaveConnection) -> None:
        ctx, commander = self._ctx, self._ctx.commander
        with self._lock:  # the collector's index for its env seeds: one that comes back gets a new one
            index = self._index.setdefault(conn.name, len(self._index)) + 1000 * ctx.stats[f"joins_{conn.name}"]
            ctx.stats[f"joins_{conn.name}"] += 1
        while commander.status().policy_iter < 0 and not ctx.ending.is_set() and conn.alive:
            ctx.wake.wait_progress(0.2)  # the learner publishes the first policy
        if ctx.ending.is_set() or not conn.alive:
            return
        start = CollectorStartTask(main_config=ctx.main_json, path_data=ctx.path_data, path_policy=ctx.path_policy,
                                   policy_id=commander.get_policy_id(), seed=ctx.seed + 1000 * (index + 1))
        if ctx.start_slave(conn, start, max(60.0, float(ctx.cfg.collector_task_timeout)), self._role_left) is None:
            return
        ctx.logger.info(f"collector '{conn.name}' started")
        with self._lock:
            if self.train_start is None:
                self.train_start = time.monotonic()
        commander.increase_collector_task_space()
        ctx.wake.notify()
        try:
            self._serve(conn)
        finally:
            commander.decrease_collector_task_space()
            ctx.wake.notify()
        if conn.alive:
            try:
                ctx.ask(conn, CollectorCloseTask(), 30.0)
            except (TaskFailed, ProtocolError) as e:
                ctx.logger.info(f"collector '{conn.name}' did not close cleanly: {e}")
        self._role_left("collector")

    def _serve(self, conn: SlaveConnection) -> None:
        ctx, commander = self._ctx, self._ctx.commander
        failures = 0
        while not ctx.ending.is_set() and conn.alive:
            seen = ctx.wake.generation
            task = commander.get_collector_task(conn.name)
            if task is None:
                # (the timeout is a safety net for time-based evaluations: short with few collectors, whose idle
                # time is the run's time, long with many, whose polls would load the coordinator)
                ctx.wake.wait_for_work(seen, min(0.5, max(0.05, 0.0125 * len(self._index))))
                continue
            ctx.wake.wake_collector()  # there was work: another idle collector may find some too
            limit = float(ctx.cfg.eval_task_timeout if isinstance(task, EvalTask) else ctx.cfg.collector_task_timeout)
            handle = ctx.send(conn, task, limit)
            try:
                result = decode_result(task, handle.result(), peer(conn))
                assert isinstance(result, (CollectResult, EvalResult))
                if isinstance(result, CollectResult):  # its data files: regular files under path_data, its own
                    problem = self._buffers.ledger.check_written(m.data_id for m in result.metadata)
                    if problem:
                        raise ProtocolError("CollectResult", "metadata.data_id", problem, peer(conn))
            except (TaskFailed, ProtocolError) as e:
                failures += 1
                if not self._failed(conn, task, handle, e, limit, failures):
                    return
                continue
            failures = 0
            ctx.stats[f"tasks_{conn.name}"] += 1
            self._finished(conn, task, result)

    def _failed(self, conn: SlaveConnection, task: CollectTask | EvalTask, handle: TaskHandle, e: Exception,
                limit: float, failures: int) -> bool:
        """A task failed: its work goes to the next free collector. False when this collector is done for."""
        ctx = self._ctx
        ctx.commander.notify_fail_collector_task(task)
        ctx.stats["failed_collector_tasks"] += 1
        if isinstance(e, TaskTimeout):  # cancel it: no file of it may be written after its files are deleted
            ctx.master.cancel(conn, handle)
            if not ctx.master.wait_idle(conn, limit):
                if conn.alive:
                    ctx.dismiss(conn, f"did not stop task {handle.task_id} within {limit:g} s of its cancellation")
                return False
        self._buffers.ledger.drop_task(task.task_id)
        if isinstance(e, ProtocolError):
            ctx.malformed(e, f"task {task.task_id} failed; its work goes to the next free collector")
        else:
            ctx.logger.info(f"collector task {task.task_id} on '{conn.name}' failed ({e}); its work goes to the next "
                            "free collector")
        if isinstance(e, SlaveLost):
            return False
        if failures >= MAX_TASK_FAILURES:
            kind = "eval" if isinstance(task, EvalTask) else "collector"
            hint = (f" (a task must finish within {kind}_task_timeout = {limit:g} s)"
                    if isinstance(e, TaskTimeout) else "")
            ctx.dismiss(conn, f"failed {failures} tasks in a row{hint}. Last error: {e}\n"
                              f"{getattr(e, 'remote_traceback', '')}")
            return False
        return True

    def _finished(self, conn: SlaveConnection, task: CollectTask | EvalTask,
                  result: CollectResult | EvalResult) -> None:
        ctx, commander = self._ctx, self._ctx.commander
        if isinstance(result, CollectResult) and result.metadata:
            self._buffers.push(task.buffer_id, task.task_id, conn.name, [m.to_json() for m in result.metadata],
                               commander.status().envstep)
        commander.finish_collector_task(task.task_id, result)
        if isinstance(result, EvalResult):
            self._report_evals()
        elif result.episode_returns:
            returns = result.episode_returns
            ctx.tb.add_scalar("collector_step/episode_return_mean", sum(returns) / len(returns),
                              commander.status().envstep)
        ctx.end_if_commander_says()
        ctx.wake.notify()
