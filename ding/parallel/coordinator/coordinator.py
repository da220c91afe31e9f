"""Coordinator: the master of parallel mode and the run itself (the :class:`RunContext` its parts see): it builds
the parts, starts the HTTP master and shuts the run down."""
from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from easydict import EasyDict

from ding.config import COORDINATOR_CONFIG
from ding.parallel.commanders.base import create_parallel_commander
from ding.parallel.coordinator.buffers import BUFFER_SAVE_INTERVAL_S, ReplayBuffers
from ding.parallel.coordinator.collector_link import CollectorLink
from ding.parallel.coordinator.comm_coordinator import CommCoordinator
from ding.parallel.coordinator.learner_link import LearnerLink
from ding.parallel.coordinator.run_context import RunContext
from ding.parallel.coordinator.watchdogs import Watchdogs
from ding.parallel.protocol import EvalRecord, LearnerClosed
from ding.parallel.transport import SlaveConnection, resolve_token
from ding.utils import ConfigError, config_of, deep_merge_dicts
from ding.utils.worker_logs import CONSOLE, WorkerLogs


class Coordinator(RunContext):
    """``cfg`` is the compiled parallel config (``compile_config_parallel``). ``on_eval(record)`` and
    ``on_end(reason)`` observe the run; ``max_env_step`` / ``max_train_iter`` end it (None or >= 1e10: no limit)."""

    config = COORDINATOR_CONFIG  # documented key by key in ding/config/parallel.py

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(self, cfg: Any, token: str | None = None, on_eval: Callable[[EvalRecord], None] | None = None,
                 on_end: Callable[[str], None] | None = None, max_env_step: int | None = None,
                 max_train_iter: int | None = None, resume: bool = False, tb_logger: Any = None) -> None:
        main, system = cfg.main, cfg.system
        coor_cfg = deep_merge_dicts(self.default_config(), system.get("coordinator", {}))
        token = resolve_token(token if token else system.get("auth_token"))  # before anything is written
        for key in ("path_data", "path_policy"):
            try:
                os.makedirs(system[key], exist_ok=True)
            except OSError as e:
                raise ConfigError(f"system_config.{key}: cannot create the shared directory {system[key]!r} "
                                  f"({e.strerror or e}); give a directory every role can write") from None
        self._logs = WorkerLogs(main.exp_name, "coordinator", tb_logger=tb_logger)  # the caller's: it closes it
        try:
            main_json = json.loads(json.dumps(main, allow_nan=True))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"the compiled main config cannot be sent to the learners and collectors as JSON: {e}; "
                              "config values must be numbers, strings, booleans, None, lists and dicts") from e
        commander = create_parallel_commander(main)
        commander.set_path_policy(system.path_policy)
        if max_env_step is not None and max_env_step < int(1e10):
            commander.max_env_step = max_env_step
        if max_train_iter is not None and max_train_iter < int(1e10):
            commander.max_train_iter = max_train_iter
        seed = int(cfg.get("seed", main.get("seed", 0)))
        self._comm = CommCoordinator(coor_cfg, self._logs.logger, token, on_new_slave=self._new_slave,
                                     on_lost_slave=self._lost_slave)
        super().__init__(coor_cfg, main_json, main.exp_name, (system.path_data, system.path_policy), seed, commander,
                         self._logs, self._comm.master, on_ending=self._shutdown)
        self._start_time = time.monotonic()
        self._buffers = ReplayBuffers(main.policy.other.replay_buffer, main.exp_name, system.path_data, self.logger,
                                      self.tb, self.stats)
        self._watchdogs = Watchdogs(self, self._buffers, on_lost=self._lost_slave)
        self._learners = LearnerLink(self, self._buffers, role_left=self._watchdogs.role_left)
        self._collectors = CollectorLink(self, self._buffers, self._report_evals, role_left=self._watchdogs.role_left)
        self._on_eval, self._on_end = on_eval, on_end
        self._evals_lock = threading.Lock()
        self._evals_reported = 0  # records of the commander's eval history already reported
        self._resume = resume  # continue with the buffers saved in <exp>/parallel_buffer.dat
        self._started = False
        self._done = threading.Event()
        self._train_end: float | None = None  # when the shutdown (the learner's last checkpoint) was over

    @property
    def host(self) -> str:
        return self.master.advertise_host

    @property
    def port(self) -> int:
        return self.master.port

    @property
    def learner_closed(self) -> LearnerClosed | None:
        """The learner's last close answer (its timing, for the run's result)."""
        return self._learners.closed

    @property
    def training_seconds(self) -> float | None:
        """Seconds from the first collector's start to the end of the shutdown: the training time without the roles'
        start-up (what ``wall_time_s`` of a serial run measures). None if training never began."""
        start = self._collectors.train_start
        return None if start is None else (self._train_end or time.monotonic()) - start

    def refused_requests(self) -> int:
        """Requests the coordinator's server refused for a missing or wrong token."""
        return self.master.refused_requests()

    def status(self) -> dict[str, Any]:
        return dict(self.commander.status().to_json(), buffer_count=self._buffers.count(),
                    wall_time=time.monotonic() - self._start_time,
                    learners=len(self.master.slaves(role="learner", alive_only=True)),
                    collectors_connected=len(self.master.slaves(role="collector", alive_only=True)))

    def start(self) -> None:
        """Start the HTTP server, connect configured slaves, accept joining ones."""
        with self._evals_lock:  # a resumed run's evaluations (loaded into the commander) were reported by that run
            self._evals_reported = len(self.commander.eval_history)
        if self._resume:
            self.notice(self._buffers.restore())
        self._comm.start()
        self._started = True
        self._watchdogs.start()
        self.logger.info(f"coordinator listening on {self.host}:{self.port}")

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def abort(self, reason: str = "aborted") -> None:
        """Stop at once (a second Ctrl-C): no checkpoint, no goodbye to the slaves. Idempotent."""
        self._mark_ending(reason)
        self.master.close(disconnect=False, reason=reason)
        self._buffers.close(keep=not self.commander.reached_stop_value)
        self._logs.close()
        self._done.set()

    def close(self) -> None:
        """End the run (if still running) and wait until everything is shut down. Idempotent."""
        if not self._started:
            self._logs.close()
            return
        self.end(self.end_reason or "coordinator closed")
        self._done.wait(120.0)

    def _shutdown(self) -> None:
        """The end of the run, in its own thread: the slaves' threads finish, then every slave is shut down."""
        reason = self.end_reason or "run finished"
        try:
            self.join_threads(time.monotonic() + 90.0)
            self._comm.close(reason)
            # a run that can be continued keeps its buffers (saved) and their files; a finished one deletes both
            self._buffers.close(keep=not self.commander.reached_stop_value)
            if self._on_end is not None:
                self._on_end(self.end_reason or "")
        except Exception:  # noqa: BLE001 -- shutting down must finish; the error is in the log
            self.logger.exception("coordinator shutdown failed")
        finally:
            self._train_end = time.monotonic()
            self._logs.close()
            self._done.set()

    def _report_evals(self) -> None:
        """Report each new record of the commander's eval history once (TensorBoard, console, ``on_eval``) and save
        the buffers for ``--resume``."""
        with self._evals_lock:
            history = self.commander.eval_history
            new, self._evals_reported = history[self._evals_reported:], len(history)
        for record in new:
            record = dataclasses.replace(record, wall_time=time.monotonic() - self._start_time)
            it, step, mean = record.train_iter, record.env_step, record.eval_return_mean
            self.tb.add_scalar("evaluator_step/eval_episode_return_mean", mean, step)
            self.tb.add_scalar("evaluator_iter/eval_episode_return_mean", mean, it)
            won = "" if record.win_rate is None else f" | win rate {record.win_rate:.0%}"
            self.logger.info(f"[eval] iter {it:,} | env steps {step:,} | return {mean:.4g} ± "
                             f"{record.eval_return_std:.3g}{won} | {record.wall_time:.1f} s", extra=CONSOLE)
            self._buffers.save(BUFFER_SAVE_INTERVAL_S)
            if self._on_eval is not None:
                self._on_eval(record)

    def _new_slave(self, conn: SlaveConnection) -> None:
        if self.ending.is_set():
            return
        link = self._learners if conn.role == "learner" else self._collectors
        self.spawn(link.run, f"ding-coord-{conn.name}", conn)

    def _lost_slave(self, conn: SlaveConnection, reason: str) -> None:
        self.stats[f"lost_{conn.role}"] += 1
        self.notice(f"{conn.role} '{conn.name}' lost ({reason}); its tasks fail and their work is handed out again")
        self.wake.notify(everyone=True)
