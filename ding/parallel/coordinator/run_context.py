"""RunContext: the run as the coordinator's parts see it (config, commander, master, logs, counters, wake-ups,
threads) and how it ends; the :class:`Coordinator` is one. WakeUps: how its threads wait for something to do."""
from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from ding.parallel.protocol import ProtocolError, Record, decode_result
from ding.parallel.transport import Master, SlaveConnection, SlaveLost, TaskFailed, TaskHandle
from ding.utils.worker_logs import CONSOLE, WorkerLogs

MAX_TASK_FAILURES = 3  # consecutive failed tasks (or malformed answers) after which a slave is dismissed


class WakeUps:
    """Learner threads wait on *progress*; idle collector threads wait for *work* and are woken one at a time (one
    that finds a task wakes the next), and ``generation`` counts wake-ups so none is lost before a thread waits."""

    def __init__(self) -> None:
        self._progress = threading.Condition()
        self._work = threading.Condition()
        self.generation = 0  # read before looking for a task; pass to wait_for_work if none was found

    def notify(self, everyone: bool = False) -> None:
        """Every progress waiter looks again, and one idle collector thread (each one with ``everyone``)."""
        with self._progress:
            self._progress.notify_all()
        self.wake_collector(everyone)

    def wake_collector(self, everyone: bool = False) -> None:
        """One idle collector thread looks for a task (each one with ``everyone``)."""
        with self._work:
            self.generation += 1
            if everyone:
                self._work.notify_all()
            else:
                self._work.notify()

    def wait_for_work(self, seen: int, timeout: float) -> None:
        """Wait to be woken, unless a wake-up came since ``seen`` (the generation when the thread looked)."""
        with self._work:
            if self.generation == seen:
                self._work.wait(timeout)

    def wait_progress(self, timeout: float) -> None:
        with self._progress:
            self._progress.wait(timeout)


class RunContext:
    def __init__(self, cfg: Any, main_json: dict, exp_name: str, paths: tuple[str, str], seed: int, commander: Any,
                 logs: WorkerLogs, master: Master, on_ending: Callable[[], None]) -> None:
        self.cfg = cfg  # the coordinator's section of system_config, defaults filled in
        self.main_json = main_json  # the compiled main config, as the start tasks carry it
        self.exp_name = exp_name
        self.path_data, self.path_policy = paths
        self.seed = seed
        self.commander = commander
        self.logger, self.tb = logs.logger, logs.tb_logger
        self.stats: collections.Counter[str] = collections.Counter()  # the run's faults and recoveries
        self.wake = WakeUps()
        self.ending = threading.Event()
        self.end_reason: str | None = None
        self.fatal_error: str | None = None
        self.master = master
        self._on_ending = on_ending
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def end(self, reason: str) -> None:
        """End the run (once): no new tasks; ``on_ending`` (in its own thread) lets the learner write its checkpoint
        and shuts every slave down."""
        if self._mark_ending(reason):
            self.logger.info(f"ending the run: {reason}")
            threading.Thread(target=self._on_ending, name="ding-coordinator-shutdown", daemon=True).start()

    def _mark_ending(self, reason: str) -> bool:
        """Every thread sees the end and the commander hands out no more tasks; True the first time."""
        with self._lock:
            first = not self.ending.is_set()
            self.end_reason = self.end_reason or reason
            self.ending.set()
        self.commander.request_end(reason)
        self.wake.notify(everyone=True)
        return first

    def fail(self, message: str) -> None:
        """End the run with an error (the first one given is the run's ``fatal_error``)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = message
        self.error(message)
        self.end(f"error: {message}")

    def end_if_commander_says(self) -> None:
        if self.commander.end_reason is not None and not self.ending.is_set():
            self.end(self.commander.end_reason)

    def guarded(self, what: str, target: Callable, *args: Any) -> None:
        """``target(*args)``; an unexpected error there ends the run (traceback in the log), it never hangs it."""
        try:
            target(*args)
        except Exception as e:  # noqa: BLE001 -- reported as the run's error
            self.logger.exception(f"coordinator: {what} failed")
            self.fail(f"internal error in {what}: {type(e).__name__}: {e}")

    def spawn(self, target: Callable, name: str, *args: Any) -> None:
        t = threading.Thread(target=self.guarded, args=(name, target, *args), name=name, daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def join_threads(self, deadline: float) -> None:
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            if t is not threading.current_thread():
                t.join(timeout=max(0.1, deadline - time.monotonic()))

    def send(self, conn: SlaveConnection, task: Record, deadline_s: float) -> TaskHandle:
        return self.master.new_task(conn, task.TASK.value, task.to_json(),  # type: ignore[attr-defined]
                                    deadline_s=deadline_s)

    def ask(self, conn: SlaveConnection, task: Record, deadline_s: float) -> Any:
        """Send ``task`` and wait for its answer, checked against the task's result record (ProtocolError)."""
        return decode_result(task, self.send(conn, task, deadline_s).result(), peer(conn))

    def start_slave(self, conn: SlaveConnection, task: Record, deadline_s: float,
                    role_left: Callable[[str], None]) -> Any:
        """Ask a start task; None when it failed: a malformed answer dismisses the slave, another error of a slave
        still there fails the run (one that died is restarted or rejoins)."""
        try:
            return self.ask(conn, task, deadline_s)
        except ProtocolError as e:
            self.malformed(e, f"the {conn.role}'s start failed")
            self.dismiss(conn, "answered its start task with a malformed record")
            role_left(conn.role)
        except TaskFailed as e:
            if not isinstance(e, SlaveLost) and conn.alive:
                self.fail(f"{conn.role} '{conn.name}' could not start: {e}")
        return None

    def malformed(self, err: ProtocolError, what: str) -> None:
        """A peer sent a malformed answer: that task failed (logged once, with the peer and the field)."""
        self.stats["malformed_answers"] += 1
        self.notice(f"{err}; {what}")

    def dismiss(self, conn: SlaveConnection, reason: str) -> None:
        self.error(f"{peer(conn)} {reason}; dismissed")
        self.master.disconnect(conn, reason, shutdown=True)

    def error(self, s: str) -> None:
        self.logger.error(s, extra=CONSOLE)

    def notice(self, s: str) -> None:
        """Log ``s`` and show it on the console (faults and recoveries the user should see)."""
        self.logger.warning(s, extra=CONSOLE)


def peer(conn: SlaveConnection) -> str:
    return f"{conn.role} '{conn.name}' at {conn.host}:{conn.port}"
