"""LearnerLink: one thread per learner starts it (from the run's latest checkpoint), keeps its queue of batches full,
takes its learn infos and closes it; a failed or malformed learn task drops its batches, three in a row end the run
or dismiss the learner."""
from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any

from ding.parallel.coordinator.buffers import ReplayBuffers
from ding.parallel.coordinator.run_context import MAX_TASK_FAILURES, RunContext, peer
from ding.parallel.protocol import (
    DATA_ID,
    GetDataTask,
    LearnerClosed,
    LearnerCloseTask,
    LearnerSlot,
    LearnerStartTask,
    LearnInfo,
    LearnResult,
    LearnTask,
    ProtocolError,
    decode_result,
)
from ding.parallel.transport import SlaveConnection, SlaveLost, TaskFailed, TaskHandle
from ding.worker.learner.checkpoint import list_iteration_checkpoints

DEMAND_WAIT_S = 0.5  # seconds one data request waits for the learner's demand (a long poll)


@dataclasses.dataclass
class _Queue:
    """Batches sent to one learner and not trained yet (at most ``window``, the learner's queue)."""

    batch_size: int
    window: int
    in_flight: int = 0
    bad_answers: int = 0  # malformed learn results in a row
    failed_tasks: int = 0  # learn tasks in a row that the learner answered with an error
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def add(self, n: int) -> None:
        with self.lock:
            self.in_flight += n


class LearnerLink:
    def __init__(self, ctx: RunContext, buffers: ReplayBuffers, role_left: Callable[[str], None]) -> None:
        self._ctx = ctx
        self._buffers = buffers
        self._role_left = role_left
        self.closed: LearnerClosed | None = None  # the last learner's close answer (its timing for result)

    def run(self, conn: SlaveConnection) -> None:
        ctx, commander = self._ctx, self._ctx.commander
        slot: LearnerSlot | None = None
        while slot is None and not ctx.ending.is_set() and conn.alive:
            slot = commander.get_learner_task()
            if slot is None:
                ctx.wake.wait_progress(0.2)  # another learner holds the slot (or is being replaced)
        if slot is None or not self._start(conn, slot):
            return
        lost = False
        try:
            demand = self._demand(conn)
            if demand is not None:
                queue = _Queue(demand.batch_size, demand.n_batches)
                while not ctx.ending.is_set() and conn.alive:
                    if not self._feed(conn, slot, queue):
                        ctx.wake.wait_progress(0.05)
        except SlaveLost:
            lost = True
        except TaskFailed as e:
            if not ctx.ending.is_set() and conn.alive:
                ctx.fail(f"learner '{conn.name}' failed: {e}")
        if lost or not conn.alive:
            commander.notify_fail_learner_task(slot)
            self._role_left("learner")
            return
        try:
            final = self.closed = ctx.ask(conn, LearnerCloseTask(wait_s=60.0), 90.0)
            commander.update_learner_info(slot.task_id, LearnInfo(learner_step=final.learner_step))
            commander.finish_learner_task(slot.task_id, final)
            ctx.logger.info(f"learner '{conn.name}' closed at train_iter {final.learner_step}")
        except (TaskFailed, ProtocolError) as e:
            ctx.error(f"learner '{conn.name}' did not close cleanly: {e}")

    def _start(self, conn: SlaveConnection, slot: LearnerSlot) -> bool:
        ctx = self._ctx
        ckpt_dir = os.path.join(ctx.exp_name, "ckpt")
        task = LearnerStartTask(task_id=slot.task_id, main_config=ctx.main_json, path_data=ctx.path_data,
                                path_policy=ctx.path_policy, policy_id=slot.policy_id, buffer_id=slot.buffer_id,
                                seed=ctx.seed, load_path=ckpt_dir if list_iteration_checkpoints(ckpt_dir) else None)
        started = ctx.start_slave(conn, task, float(ctx.cfg.learner_task_timeout), self._role_left)
        if started is None:
            ctx.commander.notify_fail_learner_task(slot)
            return False
        if started.loaded:
            ctx.logger.info(f"learner '{conn.name}' continues from its checkpoint at train_iter {started.learner_step}")
        ctx.commander.learner_started(slot.task_id, started)
        ctx.wake.notify()
        return True

    def _demand(self, conn: SlaveConnection) -> Any:
        """The learner's data demand (batch size, batches it keeps queued); None once it was dismissed."""
        ctx = self._ctx
        bad = 0
        while not ctx.ending.is_set() and conn.alive:
            try:
                answer = ctx.ask(conn, GetDataTask(wait_s=DEMAND_WAIT_S), DEMAND_WAIT_S + 10.0)
            except ProtocolError as e:
                bad += 1
                ctx.malformed(e, "asking again")
                if bad >= MAX_TASK_FAILURES:
                    ctx.dismiss(conn, f"sent {bad} malformed data demands in a row")
                    return None
                continue
            if answer.demand is not None:
                return answer.demand
        raise SlaveLost(f"learner '{conn.name}' gave no data demand before the run ended")

    def _feed(self, conn: SlaveConnection, slot: LearnerSlot, queue: _Queue) -> bool:
        """Send one learn task of as many batches as the queue has room for and pacing allows; False if none."""
        ctx, commander = self._ctx, self._ctx.commander
        # a quarter of the window per task: with several tasks in flight, batches arrive while the learner trains
        room = min(queue.window - queue.in_flight, max(1, queue.window // 4))
        if room <= 0:
            return False
        batches = self._buffers.sample(slot.buffer_id, queue.batch_size, commander.status().learner_step, room,
                                       commander.learner_may_train, commander.batch_served)
        if not batches:
            return False
        ids = [m[DATA_ID] for b in batches for m in b]  # pinned until the task is over
        queue.add(len(batches))
        ctx.wake.wake_collector()  # batches served: pacing may let collection go on
        timeout = float(ctx.cfg.learner_task_timeout)
        task = LearnTask.of_batches(batches, envstep=commander.status().envstep, wait_s=timeout)
        handle = ctx.send(conn, task, timeout + 5.0)

        def on_done(h: TaskHandle) -> None:  # (in an HTTP thread)
            queue.add(-len(batches))
            ctx.guarded(f"a learn result of '{conn.name}'", self._learned, conn, slot, task, queue, ids, h)

        handle.add_done_callback(on_done)
        return True

    def _learned(self, conn: SlaveConnection, slot: LearnerSlot, task: LearnTask, queue: _Queue, ids: list[str],
                 handle: TaskHandle) -> None:
        ctx = self._ctx
        self._buffers.ledger.unpin(ids)
        err = handle.error
        if err is not None:
            if isinstance(err, SlaveLost) or ctx.ending.is_set() or not conn.alive:
                return
            queue.failed_tasks += 1
            if queue.failed_tasks >= MAX_TASK_FAILURES:  # the learner itself, not one task's data
                ctx.fail(f"learner '{conn.name}' failed: {err} ({queue.failed_tasks} learn tasks in a row)")
                return
            ctx.logger.error(f"learner '{conn.name}': a learn task failed ({err}); its {len(task.data)} batch(es) "
                             f"are dropped (data from {self._buffers.writers(ids)}); the run goes on")
            ctx.stats["failed_learn_tasks"] += 1
            return
        queue.failed_tasks = 0
        try:
            result = decode_result(task, handle.result(), peer(conn))
            assert isinstance(result, LearnResult)
        except ProtocolError as e:  # that learn task failed: its batches are not trained, the run goes on
            queue.bad_answers += 1
            ctx.malformed(e, f"its {len(task.data)} batch(es) are dropped")
            if queue.bad_answers >= MAX_TASK_FAILURES and conn.alive:
                ctx.dismiss(conn, f"sent {queue.bad_answers} malformed learn results in a row")
            return
        queue.bad_answers = 0
        for info in result.infos:
            if info.priority_info is not None:
                self._buffers.get(slot.buffer_id).update(info.priority_info.to_json())
            ctx.commander.update_learner_info(slot.task_id, info)  # (the learner logs its learner_iter/* scalars)
            ctx.end_if_commander_says()
        if result.skipped_files:
            ctx.stats["skipped_files"] += result.skipped_files
            ctx.logger.warning(f"learner '{conn.name}' skipped {result.skipped_files} missing or damaged data "
                               "file(s)")
        ctx.wake.notify()
