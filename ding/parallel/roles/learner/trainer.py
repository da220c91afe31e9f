"""Trainer: the training half of a learner process, a :class:`BaseLearner` trained by one thread of this process."""
from __future__ import annotations

import collections
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from easydict import EasyDict

from ding.parallel.files import learner_load_path
from ding.parallel.protocol import DemandAnswer, LearnerClosed, LearnerDemand, LearnerStartTask, LearnInfo, LearnResult
from ding.parallel.roles.learner.batch_reader import ReadBatches
from ding.utils.torch_threads import torch_threads_in_this_thread
from ding.utils.tracking import TrackingWriter
from ding.worker.learner.base_learner import BaseLearner
from ding.worker.learner.checkpoint import find_latest_checkpoint

_STOPPED = object()


def policy_of(view: Any) -> Any:
    """The policy instance behind a learn-mode view (a namedtuple of bound methods), or ``view`` itself."""
    return getattr(getattr(view, "forward", None), "__self__", view)


def build_task_learner(task: LearnerStartTask, name: str, data_source: Callable, hooks: list,
                       tb_logger: Any = None) -> tuple[BaseLearner, bool]:
    """The learner a start task asks for (with ``hooks``), at the checkpoint the task names (tensors only, never
    unpickled); and whether one was loaded."""
    from ding.worker.builder import build_learning  # lazy: it imports workers

    cfg = EasyDict(task.main_config)
    ckpt_dir = os.path.join(cfg.exp_name, "ckpt")
    load_path = learner_load_path(task.load_path, ckpt_dir)
    learner = build_learning(cfg, seed=task.seed, learner_cfg=EasyDict(dict(cfg.policy.learn.learner)),
                             exp_name=cfg.exp_name, instance_name=name, data_source=data_source, ckpt_dir=ckpt_dir,
                             log_dir=os.path.join(cfg.exp_name, "log", name), tb_logger=tb_logger).learner
    for hook in hooks:
        learner.register_hook(hook)
    if load_path:
        path = find_latest_checkpoint(load_path, learner.logger) if os.path.isdir(load_path) else load_path
        if path:
            learner.load_checkpoint(path, allow_pickle=False)
    return learner, bool(load_path) and learner.train_iter > 0


class _TaskSlot:
    """The learn infos of one learn task's batches; ``event`` is set once, when the last batch is in."""

    def __init__(self, n: int) -> None:
        self.event = threading.Event()
        self.left = n
        if n <= 0:
            self.event.set()
        self.infos: list[Any] = []  # (learn_info, policy_iter, stats) per trained batch

    def add(self, info: Any) -> None:
        self.infos.append(info)
        self.left -= 1
        if self.left <= 0:
            self.event.set()


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy().tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class Trainer:
    """One learner's training thread, which only trains the batches learn tasks queued (a task's thread is woken once,
    when its last batch is trained); a training error is raised, with its cause, by the next call."""

    def __init__(self, name: str, logger: logging.Logger) -> None:
        self.name = name
        self.learner: BaseLearner | None = None
        self._logger = logger
        self._tracking: TrackingWriter | None = None
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._demand: LearnerDemand | None = None
        self._demand_set = threading.Event()
        self._data: queue.Queue = queue.Queue()  # (batch, task slot, envstep): read, not yet trained
        self._slots: collections.deque = collections.deque()  # slots of handed-out batches, in training order
        self._train_s = 0.0  # the training thread's run time, and of it the time it waited for a batch
        self._data_wait_s = 0.0
        self._start_iter = 0

    @property
    def training(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, learner: BaseLearner, demand: LearnerDemand, tracking: TrackingWriter | None = None) -> None:
        """Train ``learner`` in a thread of this process; ``demand`` is what :meth:`demand` answers from now on."""
        self.learner, self._tracking, self._demand = learner, tracking, demand
        self._demand_set.set()
        self._thread = threading.Thread(target=self._train, name=f"ding-{self.name}-train", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Raise the training thread's error, or that no start task came yet."""
        if self.error is not None:
            raise RuntimeError(f"the learner stopped with {type(self.error).__name__}: {self.error}") from self.error
        if self.learner is None:
            raise RuntimeError(f"learner '{self.name}' has no learner task yet (a LearnerStartTask first)")

    def demand(self, wait_s: float) -> DemandAnswer:
        """The data demand, waiting up to ``wait_s`` for the start task to set it."""
        self.check()
        if not self._demand_set.wait(wait_s):
            self.check()
            return DemandAnswer(demand=None)
        return DemandAnswer(demand=self._demand)

    def train(self, read: ReadBatches) -> LearnResult:
        """Queue the read batches for the training thread; answer once it trained on all of them (or stopped)."""
        self.check()
        batches = read.batches()
        slot = _TaskSlot(sum(batch is not None for batch in batches))
        for batch in batches:
            if batch is not None:
                self._data.put((batch, slot, read.envstep))
        deadline = time.monotonic() + read.wait_s
        while not slot.event.wait(0.1):
            if self._stop.is_set() or time.monotonic() > deadline:
                break
        self.check()
        learner = self.learner
        trained = iter([LearnInfo.from_learner(info, it, stats, _jsonable) for info, it, stats in list(slot.infos)])
        infos: list[LearnInfo] = []
        for batch in batches:  # in the task's batch order
            info = LearnInfo(learner_step=learner.train_iter if learner else 0, skipped=True) if batch is None \
                else next(trained, None)
            if info is None:
                break  # training stopped before this batch
            infos.append(info)
        return LearnResult(infos=infos, trained=len(infos), skipped_files=read.skipped_files)

    def next_batch(self, on_idle: Callable[[], None]) -> Any:
        """The training thread's next batch (None: stopping), calling ``on_idle`` every 0.1 s while none is there."""
        t0 = time.perf_counter()
        while True:
            try:
                item = self._data.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    return None
                on_idle()
                continue
            if item is _STOPPED:
                return None
            self._data_wait_s += time.perf_counter() - t0
            batch, slot, envstep = item
            self._slots.append(slot)
            if envstep >= 0 and self.learner is not None:
                self.learner.collector_envstep = envstep
            return batch

    def add_info(self, learn_info: dict, policy_iter: int) -> None:
        if not self._slots:
            return  # an iteration not fed by a learn task
        learner = self.learner
        stats = dict(learner.log_buffer.get("scalar", {})) if learner is not None else {}  # the buffer is reused
        self._slots.popleft().add((learn_info, policy_iter, stats))

    def stop(self, timeout: float) -> LearnerClosed:
        """Stop training (the learner's after_run hooks write the checkpoint), close the learner and the tracking."""
        self._stop.set()
        learner = self.learner
        if learner is not None:
            learner.request_stop()
        self._data.put(_STOPPED)
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        if learner is not None and not self.training:
            learner.close()
        if self._tracking is not None:
            self._tracking.finish({"learner_train_iter": learner.train_iter if learner else 0}, "finished")
            self._tracking.close()
            self._tracking = None
        if learner is None:
            return LearnerClosed(learner_step=0)
        return LearnerClosed(learner_step=learner.train_iter, ckpt_name=learner.ckpt_name, train_s=self._train_s,
                             data_wait_s=min(self._data_wait_s, self._train_s),
                             trained=max(0, learner.train_iter - self._start_iter))

    def _train(self) -> None:
        assert self.learner is not None
        torch_threads_in_this_thread()
        self._start_iter = self.learner.train_iter
        t0 = time.perf_counter()
        try:
            self.learner.start()
        except BaseException as e:  # noqa: BLE001 -- kept and raised by the next call
            self.error = e
            self._logger.exception(f"learner '{self.name}' stopped with an error")
        finally:
            self._train_s = time.perf_counter() - t0
            self._stop.set()
            while self._slots:  # wake every learn task waiting for a batch that will not be trained
                self._slots.popleft().event.set()
