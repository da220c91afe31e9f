"""FlaskFileSystemLearner: a learner process's task side, an HTTP slave of the coordinator (docs/parallel.md)."""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from easydict import EasyDict

from ding.parallel.files import policy_path, run_dir, write_policy
from ding.parallel.protocol import (
    DemandAnswer,
    GetDataTask,
    LearnerClosed,
    LearnerCloseTask,
    LearnerDemand,
    LearnerStarted,
    LearnerStartTask,
    LearnResult,
    LearnTask,
)
from ding.parallel.roles.learner.base import BaseCommLearner
from ding.parallel.roles.learner.batch_reader import BatchReader, ReadBatches
from ding.parallel.roles.learner.trainer import Trainer, build_task_learner, policy_of
from ding.parallel.roles.role import COMM_ROLE_CONFIG, RoleSlave, SlaveBacked
from ding.utils import COMM_LEARNER_REGISTRY, deep_merge_dicts
from ding.utils.data import learn_takes_columns
from ding.utils.torch_threads import torch_threads_in_this_thread
from ding.utils.tracking import role_writer
from ding.worker.learner.base_learner import BaseLearner
from ding.worker.learner.learner_hook import LearnerHook

__all__ = ["FlaskFileSystemLearner", "ReadBatches", "SendLearnInfoHook", "SendPolicyHook"]
PREFETCH_BATCHES = 4  # batches the coordinator keeps queued at a learner (docs/benchmarks.md)
# at most this often, so a fast learner with DI-engine's send_policy_freq=1 does not write far more than is read
SEND_POLICY_INTERVAL_S = 0.05


class PolicyPublisher:
    """Publish ``{'model': tensors, 'iter': n}`` at ``path``, atomically, so training never waits for the file system;
    a failed write is raised by the next publish."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.written_iter = -1  # the iteration of the policy file on disk (what collectors can read)
        self.handed_iter = -1  # the iteration last handed over (written, or queued), and its time.monotonic()
        self.handed_at = float("-inf")
        self._lock = threading.Lock()  # guards _pending / _closed
        self._write_lock = threading.Lock()  # one write at a time, and never an older policy over a newer one
        self._pending: tuple[dict, int] | None = None
        self._wake = threading.Event()
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def publish_now(self, model_state: dict, policy_iter: int) -> None:
        """Write the policy at once (it wins over anything still queued)."""
        self._raise_error()
        with self._lock:
            self._pending = None
        self.handed_iter, self.handed_at = policy_iter, time.monotonic()
        self._write(model_state, policy_iter)

    def publish_soon(self, model_state: dict, policy_iter: int) -> None:
        """Snapshot the tensors for the writer thread (only the newest snapshot waiting is written)."""
        self._raise_error()
        snapshot = {k: v.detach().clone() if hasattr(v, "detach") else v for k, v in model_state.items()}
        with self._lock:
            if self._closed:
                return
            self._pending = (snapshot, policy_iter)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ding-policy-publisher", daemon=True)
                self._thread.start()
        self.handed_iter, self.handed_at = policy_iter, time.monotonic()
        self._wake.set()

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, stop the writer thread (idempotent)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout)

    def _write(self, model_state: dict, policy_iter: int) -> None:
        with self._write_lock:
            if policy_iter < self.written_iter:
                return  # a snapshot the writer took before a newer policy was written at once
            write_policy(self.path, model_state, policy_iter)
            self.written_iter = policy_iter

    def _run(self) -> None:
        torch_threads_in_this_thread()
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                item, self._pending = self._pending, None
                closed = self._closed
            if item is not None:
                try:
                    self._write(*item)
                except Exception as e:  # noqa: BLE001 -- raised by the next publish, in the training thread
                    self._error = e
                    return
            if closed:
                return

    def _raise_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError(f"publishing the policy to {self.path} failed: {type(err).__name__}: {err}") from err


class SendPolicyHook(LearnerHook):
    """Publish the policy every ``send_policy_freq`` iterations, at most every ``send_policy_interval`` seconds."""

    def __init__(self, comm: FlaskFileSystemLearner) -> None:
        super().__init__("send_policy", 30, position="after_iter")
        self._comm = comm

    def __call__(self, engine: BaseLearner) -> None:
        comm, publisher = self._comm, self._comm._publisher
        assert publisher is not None  # (the start task sets it before training starts)
        if (engine.train_iter - publisher.handed_iter >= comm.send_policy_freq
                and time.monotonic() - publisher.handed_at >= comm.send_policy_interval):
            publisher.publish_soon(engine.policy.state_dict()["model"], engine.train_iter)


class SendLearnInfoHook(LearnerHook):
    """Hand each iteration's learn info to the learn task waiting for it (after the other hooks)."""

    def __init__(self, comm: FlaskFileSystemLearner) -> None:
        super().__init__("send_learn_info", 40, position="after_iter")
        self._comm = comm

    def __call__(self, engine: BaseLearner) -> None:
        self._comm.send_learn_info(engine.learn_info)


@COMM_LEARNER_REGISTRY.register("flask_fs")
class FlaskFileSystemLearner(SlaveBacked, BaseCommLearner):
    """A start task builds the learner and hands it to a :class:`Trainer`; a learn task's data files are read by its
    own thread (:class:`BatchReader`) and answered once trained; a :class:`PolicyPublisher` writes the policy file."""

    config = dict(
        type="flask_fs",
        import_names=[],
        **COMM_ROLE_CONFIG,
        # MiB of decoded samples kept in memory, up to the replay buffer's size; None: replay_buffer_size x 64 KiB,
        # 256-4096 MiB
        sample_cache_mb=None,
        max_data_file_mb=64,  # a data file larger than this, or decoding to more, is skipped as damaged
    )
    _column_batches = True  # batches reach a policy that takes them as columns (False: always as sample lists)

    def __init__(self, cfg: Any, name: str = "learner0", token: str | None = None) -> None:
        super().__init__(deep_merge_dicts(self.default_config(), cfg))
        cfg = self._cfg
        self.name = name
        self._logger = logging.getLogger(f"ding.learner_slave.{name}")
        handlers: dict[type, Any] = {
            LearnerStartTask: self.deal_with_learner_start, GetDataTask: self.deal_with_get_data,
            LearnTask: self.deal_with_learner_learn, LearnerCloseTask: self.deal_with_learner_close}
        self._slave: Any = RoleSlave(cfg, name, "learner", token, handlers, self.deal_with_resource(), self._logger)
        self.send_policy_interval = SEND_POLICY_INTERVAL_S
        self.send_policy_freq = 1  # this and the next three are set by the start task
        self._publisher: PolicyPublisher | None = None
        self._reader: BatchReader | None = None
        self._columns = False  # hand batches over as ColumnBatch (the learner's policy takes them)
        self._trainer = Trainer(name, self._logger)
        self._start_lock = threading.Lock()

    def close(self) -> None:
        """Stop training (the learner's after_run hooks write a checkpoint), close the learner and the slave."""
        self._stop_learner(timeout=30.0)
        self._slave.close()
        super().close()

    def _stop_learner(self, timeout: float) -> LearnerClosed:
        closed = self._trainer.stop(timeout)
        if self._publisher is not None:
            self._publisher.close()
        return closed

    def deal_with_resource(self) -> dict:
        return {"cpu": os.cpu_count() or 1, "gpu": 0}

    def deal_with_learner_start(self, task: LearnerStartTask) -> LearnerStarted:
        with self._start_lock:
            learner = self._trainer.learner
            if learner is not None:
                if self._trainer.training:
                    return LearnerStarted(learner_step=learner.train_iter, policy_iter=self.policy_iter,
                                          already_started=True)
                raise RuntimeError(f"learner '{self.name}' already ran a learner task; start a new process")
            return self._start_learning(task)

    def _start_learning(self, task: LearnerStartTask) -> LearnerStarted:
        cfg = EasyDict(task.main_config)
        self._reader = BatchReader.for_task(task, self._cfg, self._logger)
        path_policy = run_dir(task.path_policy, self._cfg.get("path_policy"), "LearnerStartTask.path_policy")
        self._publisher = PolicyPublisher(policy_path(path_policy, task.policy_id))
        os.makedirs(path_policy, exist_ok=True)
        self.send_policy_freq = max(1, int(cfg.policy.learn.learner.get("send_policy_freq", 1)))
        tracking = role_writer(cfg, self.name, os.path.join(cfg.exp_name, "log", self.name))
        learner, loaded = build_task_learner(task, self.name, self.get_data, self.hooks4call, tb_logger=tracking)
        tracking.start(cfg)
        self._trainer.learner = learner
        self._columns = type(self)._column_batches and learn_takes_columns(policy_of(learner.policy))
        self.send_policy(learner.policy.state_dict())
        self._trainer.start(learner, LearnerDemand(batch_size=int(learner.policy.get_attribute("batch_size")),
                                                   n_batches=PREFETCH_BATCHES), tracking)
        learner.info(f"learner task {task.task_id} started at train_iter {learner.train_iter}")
        return LearnerStarted(learner_step=learner.train_iter, policy_iter=self.policy_iter, loaded=loaded)

    def deal_with_get_data(self, task: GetDataTask) -> DemandAnswer:
        """The learner's data demand, waiting up to ``wait_s`` for it; state, not a one-shot message: a coordinator
        that re-admits this learner asks again and must get the same answer."""
        return self._trainer.demand(task.wait_s)

    def deal_with_learner_learn(self, task: LearnTask) -> LearnResult:
        """Read the batches' data files in the task's thread, answer once the training thread trained them all."""
        self._trainer.check()  # (a learner means a start task came: the reader is set)
        assert self._reader is not None
        return self._trainer.train(self._reader.read(task, self._columns))

    def deal_with_learner_close(self, task: LearnerCloseTask) -> LearnerClosed:
        """Stop training; the learner's after_run hooks write the final checkpoint."""
        learner = self._trainer.learner
        closed = self._stop_learner(timeout=task.wait_s)
        if learner is not None and self._trainer.error is None:
            self.send_policy(learner.policy.state_dict())  # the final policy, written at once
        return closed

    def get_data(self, batch_size: int) -> list | None:
        """The learner's data source: the next batch read by a learn task (None: stopping)."""
        return self._trainer.next_batch(self.on_idle)

    def on_idle(self) -> None:
        """Called about every 0.1 s while :meth:`get_data` waits (a subclass's keep-alive)."""

    def send_learn_info(self, learn_info: dict) -> None:
        self._trainer.add_info(learn_info, self.policy_iter)

    def send_policy(self, state_dict: dict) -> None:
        """Publish the policy now (at start and at the end; during training :class:`SendPolicyHook` does)."""
        if self._publisher is None:
            raise RuntimeError(f"learner '{self.name}' has no policy path yet (a LearnerStartTask first)")
        learner = self._trainer.learner
        self._publisher.publish_now(state_dict["model"], learner.train_iter if learner is not None else 0)

    @property
    def policy_iter(self) -> int:
        """The iteration of the published policy file (-1: none yet)."""
        return self._publisher.written_iter if self._publisher is not None else -1

    @property
    def published_iter(self) -> int:
        """The iteration of the policy last handed to the publisher (-1: none yet)."""
        return self._publisher.handed_iter if self._publisher is not None else -1

    @property
    def hooks4call(self) -> list:
        return [SendPolicyHook(self), SendLearnInfoHook(self)]

