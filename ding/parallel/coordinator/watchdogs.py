"""Watchdogs: a run never looks alive while doing nothing. It fails when no learner or collector came up, or the last
one left and none (re)joined, within ``startup_timeout``; a learner with data ready but no train iteration for
``STALL_SHARE`` of ``learner_task_timeout`` is dismissed (a launcher restarts it from its checkpoint)."""
from __future__ import annotations

import time
from collections.abc import Callable

from ding.parallel.coordinator.buffers import ReplayBuffers
from ding.parallel.coordinator.run_context import RunContext
from ding.parallel.transport import SlaveConnection
from ding.utils import shown_dir

STALL_SHARE = 0.5  # (replaces the key coordinator.learner_stall_timeout)


class Watchdogs:
    def __init__(self, ctx: RunContext, buffers: ReplayBuffers,
                 on_lost: Callable[[SlaveConnection, str], None]) -> None:
        self._ctx = ctx
        self._buffers = buffers
        self._on_lost = on_lost

    def start(self) -> None:
        self._ctx.spawn(self._startup, "ding-startup-watch")
        self._ctx.spawn(self._learner_progress, "ding-learner-watchdog")

    def role_left(self, role: str) -> None:
        """A learner or collector left: if it was the last one, wait ``startup_timeout`` for one to (re)join."""
        ctx = self._ctx
        if ctx.ending.is_set() or ctx.master.slaves(role=role, alive_only=True):
            return
        ctx.notice(f"no {role} is connected; waiting up to startup_timeout ({ctx.cfg.startup_timeout:g} s) for one "
                   "to join")
        ctx.spawn(self._wait_for, f"ding-{role}-watch", role)

    def _wait_for(self, role: str) -> None:
        self._within_startup_timeout(lambda: bool(self._ctx.master.slaves(role=role, alive_only=True)),
                                     lambda: f"every {role} is gone and none joined", 0.5)

    def _startup(self) -> None:
        commander = self._ctx.commander

        def up() -> bool:
            status = commander.status()
            return status.policy_iter >= 0 and status.collectors > 0

        def missing() -> str:
            return f"no {'learner' if commander.status().policy_iter < 0 else 'collector'} came up"

        self._within_startup_timeout(up, missing, 0.2, f"; see the role logs under {shown_dir(self._ctx.exp_name)}log/")

    def _within_startup_timeout(self, done: Callable[[], bool], what: Callable[[], str], poll: float,
                                hint: str = "") -> None:
        """Wait until ``done()``; past ``startup_timeout`` the run fails with ``what()`` (and ``hint``)."""
        ctx = self._ctx
        limit = float(ctx.cfg.startup_timeout)
        deadline = time.monotonic() + limit
        while not ctx.ending.is_set():
            if done():
                return
            if time.monotonic() > deadline:
                ctx.fail(f"{what()} within startup_timeout ({limit:g} s){hint}")
                return
            ctx.ending.wait(poll)

    def _learner_progress(self) -> None:
        ctx = self._ctx
        limit = float(ctx.cfg.learner_task_timeout) * STALL_SHARE
        last_step, since = None, time.monotonic()
        while not ctx.ending.wait(min(1.0, limit / 4)):
            status = ctx.commander.status()
            learners = ctx.master.slaves(role="learner", alive_only=True)
            ready = bool(learners) and status.policy_iter >= 0 and ctx.commander.learner_may_train(
                self._buffers.count())
            if not ready or status.learner_step != last_step:
                last_step, since = status.learner_step, time.monotonic()
                continue
            if time.monotonic() - since > limit:
                for conn in learners:
                    ctx.stats["stalled_learner"] += 1
                    ctx.notice(f"learner '{conn.name}' at {conn.host}:{conn.port} made no train iteration for "
                               f"{limit:g} s (half of learner_task_timeout) while data was ready: dismissing it")
                    ctx.master.disconnect(conn, "no training progress (half of learner_task_timeout)", shutdown=True)
                    self._on_lost(conn, "no training progress")
                since = time.monotonic()
